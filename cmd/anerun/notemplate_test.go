package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/tokenizer"
)

// TestNoChatTemplateContinuesText: a model without a chat template (GPT-2's tokenizer) continues
// the prompt as plain text, exactly as --raw does, and says so once on stderr, also in a chat.
func TestNoChatTemplateContinuesText(t *testing.T) {
	path := testmodel.GPT2TokenizerBundle(t)
	const text = "Once upon a time"
	want := expected(t, path, func(tok *tokenizer.Tokenizer) []int { return encodeRaw(tok, text) }, 8)
	r := anerun(t, "", path, text, "-n", "8")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != want+"\n" {
		t.Errorf("stdout %q; want the --raw continuation %q", r.stdout, want+"\n")
	}
	if n := strings.Count(r.stderr, noTemplateNote); n != 1 {
		t.Errorf("the note appears %d times on stderr; want once:\n%s", n, r.stderr)
	}
	if raw := anerun(t, "", path, "--raw", text, "-n", "8"); raw.stdout != r.stdout || strings.Contains(raw.stderr, noTemplateNote) {
		t.Errorf("--raw: %q, stderr %q", raw.stdout, raw.stderr)
	}

	chat := anerun(t, "Hello\nAnd then?\n", "-i", path, "-n", "4", "--verbose")
	if chat.code != 0 || strings.Count(chat.stderr, noTemplateNote) != 1 || strings.Count(chat.stderr, "generated: 4 tokens") != 2 {
		t.Errorf("chat: exit %d, stderr:\n%s", chat.code, chat.stderr)
	}

	sys := anerun(t, "", path, text, "--system", "Be brief.")
	if sys.code == 0 || !strings.Contains(sys.stderr, "--system needs a chat template, and this model has none") {
		t.Errorf("--system without a template: exit %d, stderr %s", sys.code, sys.stderr)
	}
}

// TestPromptBOS: with Llama 3's tokenizer a --raw prompt gets <|begin_of_text|> from the
// post-processor (HF's add_special_tokens=True), and a chat prompt gets exactly the one its
// template writes (apply_chat_template tokenizes with add_special_tokens=False).
func TestPromptBOS(t *testing.T) {
	tokJSON, cfg, err := testtok.Files("llama3")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadJSON(tokJSON, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const bos = 128000
	if got := encodeRaw(tok, "Hello"); !slices.Equal(got, []int{bos, 9906}) {
		t.Errorf("raw prompt ids %v; want [128000 9906]", got)
	}
	ids, err := encodeChat(tok, []chatMessage{{Role: "user", Content: "Hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] != bos || slices.Contains(ids[1:], bos) {
		t.Errorf("chat prompt ids %v; want exactly one leading <|begin_of_text|>", ids)
	}
}
