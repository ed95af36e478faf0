package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chatRecords returns the lines of a chat golden file (chat-public.jsonl, ...): the request keys
// in order plus the expected rendering in "text".
func chatRecords(t *testing.T, file string) [][]byte {
	f, err := os.Open(filepath.Join(testdataDir, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// TestGoldenChat renders every record of chat-public.jsonl (transformers'
// apply_chat_template(..., tokenize=False) with the Qwen3 template) byte-identically, both
// through the JSON request API and through the typed API.
func TestGoldenChat(t *testing.T) {
	checkChatGolden(t, qwen(t), "chat-public.jsonl", 10)
}

// TestGoldenChatLlama3 renders chat-llama3-public.jsonl with the Llama 3 template (which writes
// the BOS itself).
func TestGoldenChatLlama3(t *testing.T) {
	checkChatGolden(t, family(t, "llama3"), "chat-llama3-public.jsonl", 6)
}

// checkChatGolden renders every record of a chat golden file byte-identically, both through the
// JSON request API and through the typed API.
func checkChatGolden(t *testing.T, tk *Tokenizer, file string, wantRecords int) {
	t.Helper()
	recs := chatRecords(t, file)
	if len(recs) != wantRecords {
		t.Fatalf("%s has %d records, want %d", file, len(recs), wantRecords)
	}
	for i, line := range recs {
		req, err := ParseObject(line)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := req.Get("text")
		// JSON request path: every key except the expected text.
		stripped := &Object{}
		for _, k := range req.Keys() {
			if k != "text" {
				stripped.Set(k, req.vals[k])
			}
		}
		body, _ := json.Marshal(stripped)
		got, err := tk.ApplyChatTemplateJSON(body)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got != want {
			t.Errorf("record %d (JSON):\n got  %q\n want %q", i, got, want)
		}
		// Typed path.
		var opts ChatOptions
		var msgs []Message
		rawMsgs, _ := req.Get("messages")
		for _, m := range rawMsgs.([]any) {
			o := m.(*Object)
			msg := Message{Extra: &Object{}}
			for _, k := range o.Keys() {
				switch k {
				case "role":
					msg.Role = o.vals[k].(string)
				case "content":
					msg.Content = o.vals[k]
				default:
					msg.Extra.Set(k, o.vals[k])
				}
			}
			msgs = append(msgs, msg)
		}
		if v, ok := req.Get("add_generation_prompt"); ok {
			opts.AddGenerationPrompt = v.(bool)
		}
		if v, ok := req.Get("enable_thinking"); ok {
			b := v.(bool)
			opts.EnableThinking = &b
		}
		if v, ok := req.Get("tools"); ok {
			for _, tool := range v.([]any) {
				opts.Tools = append(opts.Tools, tool.(*Object))
			}
		}
		got, err = tk.ApplyChatTemplate(msgs, opts)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got != want {
			t.Errorf("record %d (typed):\n got  %q\n want %q", i, got, want)
		}
	}
}

func TestChatTemplateQwen3Features(t *testing.T) {
	tk := qwen(t)
	args := NewObject("city", "Paris", "unit", "c", "n", json.Number("1.0"))
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", Content: "", Extra: NewObject("tool_calls", []any{
			NewObject("type", "function", "function", NewObject("name", "get_weather", "arguments", args)),
		})},
		{Role: "tool", Content: `{"temp": 21}`},
		{Role: "assistant", Content: "<think>\nok\n</think>\n\nIt is 21."},
	}
	got, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<|im_start|>system\nBe brief.<|im_end|>\n",
		`<tool_call>` + "\n" + `{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c", "n": 1.0}}` + "\n</tool_call>",
		"<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n",
		"<|im_start|>assistant\n<think>\nok\n</think>\n\nIt is 21.<|im_end|>\n<|im_start|>assistant\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendering lacks %q:\n%s", want, got)
		}
	}
	// continue_final_message stops right after the last content.
	cont, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello, I am"}},
		ChatOptions{ContinueFinalMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(cont, "Hello, I am") {
		t.Errorf("continue_final_message: %q", cont)
	}
	if _, err := tk.ApplyChatTemplate(nil, ChatOptions{ContinueFinalMessage: true, AddGenerationPrompt: true}); err == nil {
		t.Error("continue_final_message with add_generation_prompt accepted")
	}
}

func TestChatTemplateErrors(t *testing.T) {
	tk := synth(t, nil)
	got, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "hi"}}, ChatOptions{})
	if err != nil || got != "user: hi<|end|><|end|>" {
		t.Fatalf("synthetic template = %q, %v", got, err)
	}
	// A template error surfaces as an error, not as partial output.
	blob, _, err := Compile(synthTokenizer(t, nil), []byte(`{"chat_template": "{{ raise_exception('no ' ~ messages[0].role) }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	tk2, _ := Load(blob)
	if _, err := tk2.ApplyChatTemplate([]Message{{Role: "user"}}, ChatOptions{}); err == nil || !strings.Contains(err.Error(), "TemplateError: no user") {
		t.Fatalf("raise_exception: %v", err)
	}
	// No template at all.
	blob, _, _ = Compile(synthTokenizer(t, nil), nil)
	tk3, _ := Load(blob)
	if _, err := tk3.ApplyChatTemplate(nil, ChatOptions{}); !errors.Is(err, ErrNoChatTemplate) {
		t.Fatalf("missing template: %v", err)
	}
	if _, err := tk.ApplyChatTemplateJSON([]byte(`{"messages": 3}`)); err == nil {
		t.Fatal("bad request accepted")
	}
}

func TestNamedTemplatesAndVars(t *testing.T) {
	cfg := `{"chat_template": [{"name": "default", "template": "D{{ x }}{{ bos_token }}"}, {"name": "tool_use", "template": "T{{ tools|length }}{{ strftime_now('%Y') }}"}], "bos_token": "<B>"}`
	blob, info, err := Compile(synthTokenizer(t, nil), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.ChatTemplates, ",") != "default,tool_use" {
		t.Fatalf("templates %v", info.ChatTemplates)
	}
	tk, _ := Load(blob)
	if got, _ := tk.ApplyChatTemplate(nil, ChatOptions{Vars: map[string]any{"x": 7}}); got != "D7<B>" {
		t.Errorf("default = %q", got)
	}
	now := func() time.Time { return time.Date(2031, 1, 2, 0, 0, 0, 0, time.UTC) }
	if got, _ := tk.ApplyChatTemplate(nil, ChatOptions{Tools: []*Object{NewObject("a", 1)}, Now: now}); got != "T12031" {
		t.Errorf("tool_use = %q", got)
	}
	if _, err := tk.ApplyChatTemplate(nil, ChatOptions{Template: "nope"}); err == nil {
		t.Error("unknown template name accepted")
	}
}

func TestObjectJSONOrder(t *testing.T) {
	in := `{"z":1,"a":{"y":[1,2.0,{"k":null}],"b":true},"m":"x"}`
	o, err := ParseObject([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(o)
	if !bytes.Equal(out, []byte(in)) {
		t.Fatalf("round trip %s", out)
	}
	if _, err := ParseObject([]byte(`[1]`)); err == nil {
		t.Fatal("array accepted as object")
	}
}

func TestTemplateParseErrorInInfo(t *testing.T) {
	_, info, err := Compile(synthTokenizer(t, nil), []byte(`{"chat_template": "{% if x %}unclosed"}`))
	if err != nil {
		t.Fatal(err)
	}
	if msg := info.ChatTemplateErrors["default"]; !strings.Contains(msg, "TemplateSyntaxError") {
		t.Fatalf("ChatTemplateErrors = %v", info.ChatTemplateErrors)
	}
}

func TestCompileWithChatTemplateFile(t *testing.T) {
	blob, info, err := CompileWith(synthTokenizer(t, nil), []byte(synthConfig), CompileOptions{ChatTemplate: "J{{ messages|length }}"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.ChatTemplates, ",") != "default" {
		t.Fatalf("templates %v", info.ChatTemplates)
	}
	tk, _ := Load(blob)
	if got, err := tk.ApplyChatTemplate([]Message{{Role: "user"}}, ChatOptions{}); err != nil || got != "J1" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestGoldenChatGemma3 renders chat-gemma3-public.jsonl with the Gemma 3 template (system
// message folded into the first user turn, "model" as the assistant role).
func TestGoldenChatGemma3(t *testing.T) {
	checkChatGolden(t, family(t, "gemma3"), "chat-gemma3-public.jsonl", 6)
}

// TestGemma3TemplateRaises: the template's raise_exception reaches the caller as an error that
// carries the template's own message.
func TestGemma3TemplateRaises(t *testing.T) {
	tk := family(t, "gemma3")
	_, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, ChatOptions{AddGenerationPrompt: true})
	const want = "Conversation roles must alternate user/assistant/user/assistant/..."
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to contain %q", err, want)
	}
	_, err = tk.ApplyChatTemplate([]Message{{Role: "user", Content: 7}}, ChatOptions{})
	if err == nil || !strings.Contains(err.Error(), "Invalid content type") {
		t.Fatalf("non-string content: error %v", err)
	}
}
