package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// harmonyDate is the clock the records of chat-gptoss-harmony.jsonl were rendered with (the
// system message carries the date).
var harmonyDate = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// TestHarmonyTemplateGolden renders chat-gptoss-harmony.jsonl with the built-in harmony template
// that the o200k_harmony tokenizer (which ships no template) gets. The records are the model
// repository's chat_template.jinja rendered by Python's jinja2 the way transformers'
// apply_chat_template sets it up (trim_blocks, lstrip_blocks, tojson as json.dumps with
// ensure_ascii=False), hand-checked against the harmony documentation: system message with the
// identity, knowledge cutoff, date, reasoning effort and channels; developer message with
// "# Instructions" and the tools as a TypeScript namespace; final answers, reasoning kept only
// where the template keeps it, tool calls on the commentary channel, tool results; and the
// conversations the template refuses ("error": true).
func TestHarmonyTemplateGolden(t *testing.T) {
	tk := family(t, "gptoss")
	if in := tk.Info(); !in.HasChatTemplate || in.BuiltinChatTemplate != "harmony" || !slices.Equal(in.ChatTemplates, []string{"default"}) {
		t.Fatalf("Info: has %v, builtin %q, templates %v", in.HasChatTemplate, in.BuiltinChatTemplate, in.ChatTemplates)
	}
	recs := chatRecords(t, "chat-gptoss-harmony.jsonl")
	if len(recs) != 20 {
		t.Fatalf("chat-gptoss-harmony.jsonl has %d records, want 20", len(recs))
	}
	for i, line := range recs {
		req, err := ParseObject(line)
		if err != nil {
			t.Fatal(err)
		}
		opts := ChatOptions{Now: func() time.Time { return harmonyDate }, Vars: map[string]any{}}
		var msgs []Message
		var want string
		wantErr := false
		for _, k := range req.Keys() {
			v := req.vals[k]
			switch k {
			case "messages":
				for _, m := range v.([]any) {
					msgs = append(msgs, messageOf(m.(*Object)))
				}
			case "add_generation_prompt":
				opts.AddGenerationPrompt = v.(bool)
			case "tools":
				for _, tool := range v.([]any) {
					opts.Tools = append(opts.Tools, tool.(*Object))
				}
			case "text":
				want = v.(string)
			case "error":
				wantErr = true
			default:
				opts.Vars[k] = v
			}
		}
		got, err := tk.ApplyChatTemplate(msgs, opts)
		switch {
		case wantErr && err == nil:
			t.Errorf("record %d: rendered %q, want an error", i, got)
		case wantErr:
			if !strings.Contains(err.Error(), "TemplateError") {
				t.Errorf("record %d: error %v is not the template's own", i, err)
			}
		case err != nil:
			t.Errorf("record %d: %v", i, err)
		case got != want:
			t.Errorf("record %d:\n got  %q\n want %q", i, got, want)
		}
	}
}

// messageOf turns one message object of a chat record into a Message.
func messageOf(o *Object) Message {
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
	return msg
}

// TestHarmonyTemplateOnlyWhenMissing: the built-in template is used only for a harmony
// tokenizer without a template of its own; a checkpoint's chat_template.jinja wins, and other
// tokenizers without a template stay without one.
func TestHarmonyTemplateOnlyWhenMissing(t *testing.T) {
	tokJSON, cfgJSON, _ := familyFiles(t, "gptoss")
	_, info, err := CompileWith(tokJSON, cfgJSON, CompileOptions{ChatTemplate: "{{ messages[0].content }}"})
	if err != nil {
		t.Fatal(err)
	}
	if info.BuiltinChatTemplate != "" || !info.HasChatTemplate {
		t.Errorf("with chat_template.jinja: builtin %q", info.BuiltinChatTemplate)
	}
	if in := family(t, "gpt2").Info(); in.HasChatTemplate || in.BuiltinChatTemplate != "" {
		t.Errorf("GPT-2 (no template, no harmony tokens): has %v, builtin %q", in.HasChatTemplate, in.BuiltinChatTemplate)
	}
	if HarmonyChatTemplate() == "" {
		t.Error("HarmonyChatTemplate is empty")
	}
}

// TestHarmonyPromptIDs: a rendered prompt encodes with every control token as its single id,
// ending in the generation prompt <|start|>assistant.
func TestHarmonyPromptIDs(t *testing.T) {
	tk := family(t, "gptoss")
	text, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: "What is 2+2?"}},
		ChatOptions{AddGenerationPrompt: true, Now: func() time.Time { return harmonyDate }, Vars: map[string]any{"reasoning_effort": "low"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := tk.Encode(text)
	const start, message, end = 200006, 200008, 200007
	if ids[0] != start || ids[len(ids)-2] != start || ids[len(ids)-1] != 173781 {
		t.Errorf("ids %v: want <|start|> first and <|start|>assistant last", ids)
	}
	count := func(id int) (n int) {
		for _, x := range ids {
			if x == id {
				n++
			}
		}
		return n
	}
	if count(start) != 3 || count(message) != 2 || count(end) != 2 {
		t.Errorf("ids %v: want 3 <|start|>, 2 <|message|>, 2 <|end|>", ids)
	}
	if !strings.Contains(text, "Reasoning: low\n\n") || tk.Decode(ids) != text {
		t.Errorf("rendering %q", text)
	}
}
