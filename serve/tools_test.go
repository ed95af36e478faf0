package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/serve/internal/schemacheck"
	"github.com/anepack/anepack/tokenizer"
)

const weatherParams = `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}`

// testTools are the tools of the tool-call tests, as a client sends them.
func testTools() []map[string]any {
	return []map[string]any{
		{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather in a city",
			"parameters": json.RawMessage(weatherParams)}},
		{"type": "function", "function": map[string]any{"name": "now", "description": "The time"}},
	}
}

func toolRequest(ts *testServer, choice any, extra map[string]any) map[string]any {
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 120, "temperature": 0.8, "seed": 5,
		"messages": []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}},
		"tools":    testTools(), "tool_choice": choice}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

// checkCall checks one tool call of an answer against the test tools.
func checkCall(t *testing.T, c toolCallOut) {
	t.Helper()
	if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 || c.Type != "function" {
		t.Fatalf("call %+v: want an id call_ + 24 characters and type function", c)
	}
	switch c.Function.Name {
	case "get_weather":
		if err := schemacheck.Validate([]byte(weatherParams), []byte(c.Function.Arguments)); err != nil {
			t.Fatalf("get_weather arguments %q: %v", c.Function.Arguments, err)
		}
	case "now":
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || len(args) != 0 {
			t.Fatalf("now arguments %q: want {}", c.Function.Arguments)
		}
	default:
		t.Fatalf("call to unknown function %q", c.Function.Name)
	}
}

// TestToolCallsRequired: with tool_choice "required" the (gibberish-speaking) model answers with
// calls in Qwen's <tool_call> form, which come back as message.tool_calls with finish_reason
// tool_calls; the stream carries the same calls as OpenAI deltas; a named function and
// parallel_tool_calls false give exactly one call.
func TestToolCallsRequired(t *testing.T) {
	ts := startServer(t, Config{Context: 512}) // the tools' descriptions make a long prompt
	for _, c := range []struct {
		choice   any
		parallel bool
		name     string
	}{
		{"required", true, ""},
		{"required", false, ""},
		{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, true, "get_weather"},
		{map[string]any{"type": "function", "function": map[string]any{"name": "now"}}, true, "now"},
	} {
		body := toolRequest(ts, c.choice, map[string]any{"parallel_tool_calls": c.parallel})
		var got chatCompletion
		ts.post(t, "/v1/chat/completions", body, &got)
		ch := got.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 {
			t.Fatalf("tool_choice %v: %+v (content %q)", c.choice, ch, deref(ch.Message.Content))
		}
		// Content only when max_tokens cut a further call short: its text comes back as is.
		if ch.Message.Content != nil && (!strings.HasPrefix(*ch.Message.Content, "<tool_call>") || got.Usage.CompletionTokens != 120) {
			t.Fatalf("tool_choice %v: content %q beside the calls (%d tokens)", c.choice, *ch.Message.Content, got.Usage.CompletionTokens)
		}
		if (!c.parallel || c.name != "") && len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("tool_choice %v, parallel %v: %d calls; want 1", c.choice, c.parallel, len(ch.Message.ToolCalls))
		}
		for _, call := range ch.Message.ToolCalls {
			checkCall(t, call)
			if c.name != "" && call.Function.Name != c.name {
				t.Fatalf("tool_choice names %s; the model called %s", c.name, call.Function.Name)
			}
		}

		// The same request streamed: deltas reassemble into the same calls.
		body["stream"] = true
		events := ts.stream(t, "/v1/chat/completions", body)
		type acc struct {
			id, typ, name, args string
			deltas              int
		}
		var calls []*acc
		var finish string
		for _, ev := range events[:len(events)-1] {
			var chunk chatChunk
			if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
				t.Fatal(err)
			}
			d := chunk.Choices[0].Delta
			if d.Content != nil && *d.Content != "" && ch.Message.Content == nil {
				t.Fatalf("content %q streamed in a tool-call answer", *d.Content)
			}
			for _, td := range d.ToolCalls {
				if td.Index == len(calls) {
					if td.ID == "" || td.Type != "function" || td.Function.Name == "" || td.Function.Arguments != "" {
						t.Fatalf("first delta of call %d: %s", td.Index, ev)
					}
					calls = append(calls, &acc{id: td.ID, typ: td.Type, name: td.Function.Name})
					continue
				}
				if td.Index != len(calls)-1 || td.ID != "" || td.Function.Name != "" {
					t.Fatalf("delta out of order: %s", ev)
				}
				calls[td.Index].args += td.Function.Arguments
				calls[td.Index].deltas++
			}
			if f := chunk.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		if finish != "tool_calls" || len(calls) != len(ch.Message.ToolCalls) {
			t.Fatalf("streamed %d calls, finish %q; the plain answer has %d", len(calls), finish, len(ch.Message.ToolCalls))
		}
		for i, a := range calls {
			want := ch.Message.ToolCalls[i]
			if a.name != want.Function.Name || a.args != want.Function.Arguments || a.deltas == 0 {
				t.Fatalf("streamed call %d %s(%s) in %d deltas; the plain answer has %s(%s)", i, a.name, a.args, a.deltas, want.Function.Name, want.Function.Arguments)
			}
		}
	}
}

// TestToolRoundTrip: the assistant's tool calls and the tool's answer go back through the chat
// template the way transformers renders them (arguments as objects, the tool message as a
// <tool_response>).
func TestToolRoundTrip(t *testing.T) {
	ts := startServer(t, Config{Context: 512})
	var first chatCompletion
	ts.post(t, "/v1/chat/completions", toolRequest(ts, "required", map[string]any{"parallel_tool_calls": false}), &first)
	call := first.Choices[0].Message.ToolCalls[0]
	msgs := []map[string]any{
		{"role": "user", "content": "What is the weather in Paris?"},
		{"role": "assistant", "content": nil, "tool_calls": []toolCallOut{call}},
		{"role": "tool", "tool_call_id": call.ID, "content": `{"temperature": 21}`},
	}
	var second chatCompletion
	ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 4, "temperature": 0,
		"messages": msgs, "tools": testTools()}, &second)

	// What the server should have rendered, built here from the same parts.
	args, err := tokenizer.ParseObject([]byte(call.Function.Arguments))
	if err != nil {
		t.Fatal(err)
	}
	var tools []*tokenizer.Object
	for _, tl := range testTools() {
		raw, _ := json.Marshal(tl)
		o, err := tokenizer.ParseObject(raw)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, o)
	}
	want := []tokenizer.Message{
		{Role: "user", Content: "What is the weather in Paris?"},
		{Role: "assistant", Content: "", Extra: tokenizer.NewObject("tool_calls", []any{tokenizer.NewObject("id", call.ID, "type", "function",
			"function", tokenizer.NewObject("name", call.Function.Name, "arguments", args))})},
		{Role: "tool", Content: `{"temperature": 21}`, Extra: tokenizer.NewObject("tool_call_id", call.ID)},
	}
	text, err := ts.tok.ApplyChatTemplate(want, tokenizer.ChatOptions{Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"<tool_call>\n{\"name\": \"" + call.Function.Name + "\", \"arguments\": ", "<tool_response>\n{\"temperature\": 21}\n</tool_response>", "# Tools"} {
		if !strings.Contains(text, part) {
			t.Fatalf("the rendered conversation lacks %q:\n%s", part, text)
		}
	}
	if n := len(ts.tok.Encode(text)); second.Usage.PromptTokens != n {
		t.Fatalf("the second turn has %d prompt tokens; rendering the conversation gives %d:\n%s", second.Usage.PromptTokens, n, text)
	}
}

// TestToolChoiceAuto: with tools and tool_choice auto the model may answer in text; the synthetic
// model's text (which calls nothing) comes back unchanged as content, equal to the runtime's
// own greedy generation for the prompt with the tools rendered. With tool_choice none the tools
// still reach the template, as vLLM does.
func TestToolChoiceAuto(t *testing.T) {
	ts := startServer(t, Config{})
	var tools []*tokenizer.Object
	for _, tl := range testTools() {
		raw, _ := json.Marshal(tl)
		o, _ := tokenizer.ParseObject(raw)
		tools = append(tools, o)
	}
	text, err := ts.tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "Hi"}}, tokenizer.ChatOptions{Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, ts.tok.Encode(text), greedy(12))
	for _, choice := range []string{"auto", "none"} {
		var got chatCompletion
		ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 12, "temperature": 0, "tool_choice": choice,
			"messages": []map[string]any{{"role": "user", "content": "Hi"}}, "tools": testTools()}, &got)
		ch := got.Choices[0]
		if ch.Message.Content == nil || *ch.Message.Content != want.Text || len(ch.Message.ToolCalls) != 0 || ch.FinishReason == "tool_calls" {
			t.Fatalf("tool_choice %s: %+v; want content %q", choice, ch, want.Text)
		}
	}
}

// TestSequenceEvents: the per-choice reader turns model text into content and OpenAI tool-call
// deltas, keeps a malformed call as text, and gives each event the log-probabilities of the
// tokens since the last one.
func TestSequenceEvents(t *testing.T) {
	ts := startServer(t, Config{})
	pl := &plan{n: 1, logprobs: 0, tools: &toolSetup{choice: choiceAuto}, opts: runtime.GenerateOptions{Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}}}
	q, err := ts.newSequence(pl, 0)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, testModel.Config.VocabSize)
	var evs []event
	for _, piece := range []string{"Let me check.\n", "<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Pa", "ris\"}}\n</tool_call>\n", "<tool_call>{\"name\": 1}</tool_call>"} {
		q.pick(logits, nil)
		evs = append(evs, q.push(piece)...)
	}
	evs = append(evs, q.finish(runtime.StopLength)...)
	var content strings.Builder
	var deltas []toolCallDelta
	lps := 0
	for _, e := range evs {
		lps += len(e.lp)
		if e.tool != nil {
			deltas = append(deltas, *e.tool)
			continue
		}
		content.WriteString(e.text)
	}
	lps += len(q.unsent())
	if content.String() != `Let me check.<tool_call>{"name": 1}</tool_call>` {
		t.Fatalf("content %q", content.String())
	}
	if len(deltas) != 3 || deltas[0].Function.Name != "get_weather" || deltas[1].Function.Arguments != `{"city": "Pa` || deltas[2].Function.Arguments != `ris"}` {
		t.Fatalf("deltas %+v", deltas)
	}
	if lps != 5 || q.finishReason(runtime.StopLength) != "tool_calls" || len(q.calls) != 1 {
		t.Fatalf("%d logprobs for 5 tokens; finish %s; %d calls", lps, q.finishReason(runtime.StopLength), len(q.calls))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
