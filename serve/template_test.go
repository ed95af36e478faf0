package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// strictTemplate is a ChatML template that, like many real ones, refuses conversations that do
// not start with a user message.
const strictTemplate = `{%- if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start with a user message.') }}{%- endif %}` +
	`{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{%- endfor %}` +
	`{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}`

// TestTemplateRefusal serves a bundle whose chat template raises an exception: the refusal is
// the client's 400, with the template's message; conversations it accepts are served.
func TestTemplateRefusal(t *testing.T) {
	path, err := buildBundle(testDir, "strict-template", func(files map[string][]byte) error {
		var cfg map[string]any
		if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
			return err
		}
		cfg["chat_template"] = strictTemplate
		b, err := json.Marshal(cfg)
		files["tokenizer_config.json"] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Open(path)
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
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 2, "messages": []map[string]string{
		{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "Hi"}}}
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", body)
	checkError(t, resp, data, 400, "messages", "invalid_value")
	var e errorBody
	json.Unmarshal(data, &e)
	if want := "Conversations must start with a user message."; !strings.Contains(e.Error.Message, want) {
		t.Fatalf("message %q does not carry the template's %q", e.Error.Message, want)
	}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "Hi"}}}, &got)
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	want := tok.Encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
	if got.Usage.PromptTokens != len(want) || got.Choices[0].FinishReason == "" {
		t.Fatalf("accepted conversation: %+v; want %d prompt tokens", got, len(want))
	}
}
