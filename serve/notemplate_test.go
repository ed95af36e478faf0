package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/tokenizer"
)

// TestNoChatTemplate serves a model whose tokenizer (GPT-2's, packed from vocab.json +
// merges.txt) has no chat template: chat requests are the client's 400 with an OpenAI error
// that says so, streaming or not, and text completions work, with the prompt encoded as HF's
// tokenizer(text) does.
func TestNoChatTemplate(t *testing.T) {
	m, err := runtime.Open(testmodel.GPT2TokenizerBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := cpu.New(m, cpu.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ts := startServer(t, Config{Model: m, Backend: b})

	for _, stream := range []bool{false, true} {
		body := map[string]any{"model": ts.ModelID(), "max_tokens": 4, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "Hi"}}}
		resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", body)
		checkError(t, resp, data, 400, "messages", "no_chat_template")
		var e errorBody
		json.Unmarshal(data, &e)
		if !strings.Contains(e.Error.Message, "no chat template") || !strings.Contains(e.Error.Message, "/v1/completions") {
			t.Errorf("message %q", e.Error.Message)
		}
	}

	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Once upon a time"
	ids := tok.EncodeWithSpecials(prompt, tokenizer.EncodeOptions{AddSpecialTokens: true})
	if len(ids) != 4 || ids[0] != 7454 {
		t.Fatalf("GPT-2 ids of %q: %v (its post-processor adds no BOS)", prompt, ids)
	}
	sess, err := runtime.NewSession(m, b, testContext)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sess.Generate(context.Background(), ids, greedy(6))
	sess.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": prompt, "max_tokens": 6, "temperature": 0}, &got)
	if len(got.Choices) != 1 || got.Choices[0].Text != want.Text || got.Usage.Usage == nil || got.Usage.Usage.PromptTokens != len(ids) {
		t.Fatalf("completion %+v; want %q from %d prompt tokens", got, want.Text, len(ids))
	}
}

// TestPromptBOS: with Llama 3's tokenizer, a /v1/completions text prompt gets the
// <|begin_of_text|> of its post-processor (HF's tokenizer(text)), and a chat prompt exactly the
// one its template writes.
func TestPromptBOS(t *testing.T) {
	tokJSON, cfg, err := testtok.Files("llama3")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadJSON(tokJSON, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{tok: tok}
	const bos = 128000
	for _, p := range []string{`"Hello"`, `["Hello"]`} {
		ids, apiErr := s.completionPrompt(json.RawMessage(p))
		if apiErr != nil || !slices.Equal(ids, []int{bos, 9906}) {
			t.Errorf("completion prompt %s: %v, %v; want [128000 9906]", p, ids, apiErr)
		}
	}
	ids, apiErr := s.renderChat([]templateMessage{{Role: "user", Content: "Hello"}})
	if apiErr != nil || ids[0] != bos || slices.Contains(ids[1:], bos) {
		t.Errorf("chat prompt ids %v (%v): want exactly one leading <|begin_of_text|>", ids, apiErr)
	}
}
