package tokenizer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anepack/anepack/tokenizer/internal/jinja"
)

// TestRealTemplateUsage measures what the real Qwen3 chat template spends on the golden
// conversations and on a long one, against the default budgets: real templates take a few dozen
// steps per message, so the defaults (a million steps plus 100 per message field) leave room
// for any conversation while a hostile template still stops within about a second.
func TestRealTemplateUsage(t *testing.T) {
	tk := qwen(t)
	var most TemplateUsage
	for i, line := range chatRecords(t, "chat-public.jsonl") {
		req, err := ParseObject(line)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []Message
		raw, _ := req.Get("messages")
		for _, m := range raw.([]any) {
			o := m.(*Object)
			role, _ := o.Get("role")
			content, _ := o.Get("content")
			msgs = append(msgs, Message{Role: role.(string), Content: content})
		}
		var u TemplateUsage
		if _, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true, Usage: &u}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		most.Steps, most.Bytes = max(most.Steps, u.Steps), max(most.Bytes, u.Bytes)
	}
	t.Logf("golden conversations: at most %d steps, %d bytes", most.Steps, most.Bytes)
	if most.Steps == 0 || most.Steps > jinja.DefaultMaxSteps/1000 || most.Bytes > jinja.DefaultMaxAlloc/1000 {
		t.Errorf("golden conversations spent up to %+v; expected a few hundred steps and a few KB", most)
	}

	// 20000 messages (1.2 million steps with this template) render within the defaults,
	// which grow with the input.
	long := make([]Message, 20000)
	for i := range long {
		long[i] = Message{Role: []string{"user", "assistant"}[i%2], Content: strings.Repeat("Hello there. ", 10)}
	}
	var u TemplateUsage
	out, err := tk.ApplyChatTemplate(long, ChatOptions{AddGenerationPrompt: true, Usage: &u})
	if err != nil {
		t.Fatalf("a conversation of %d messages: %v", len(long), err)
	}
	perMessage := u.Steps / int64(len(long))
	t.Logf("%d messages: %d steps (%d per message), %d bytes for %d bytes of output", len(long), u.Steps, perMessage, u.Bytes, len(out))
	if perMessage < 20 || perMessage > 100 {
		t.Errorf("%d steps per message; the Qwen3 template takes about 66", perMessage)
	}
}

// TestHostileChatTemplate: a template that would exhaust memory fails with an error naming the
// limit, and the caller's limits apply.
func TestHostileChatTemplate(t *testing.T) {
	tokJSON, cfgJSON, _ := qwenFiles(t)
	var cfg map[string]any
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = `{{ "ab" * 2**62 }}` // used to panic in strings.Repeat
	edited, _ := json.Marshal(cfg)
	blob, _, err := Compile(tokJSON, edited)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Load(blob)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.ApplyChatTemplate([]Message{{Role: "user", Content: "Hi"}}, ChatOptions{})
	if err == nil || !strings.Contains(err.Error(), "chat template: MemoryError") {
		t.Fatalf("got %v; want a MemoryError from the chat template", err)
	}
	tk2 := qwen(t)
	_, err = tk2.ApplyChatTemplate([]Message{{Role: "user", Content: "Hi"}}, ChatOptions{Limits: TemplateLimits{MaxSteps: 5}})
	if err == nil || !strings.Contains(err.Error(), "step budget of 5") {
		t.Fatalf("MaxSteps 5: %v", err)
	}
}
