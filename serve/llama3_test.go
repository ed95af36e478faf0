package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/serve/toolcall"
	"github.com/anepack/anepack/tokenizer"
)

// TestDetectToolFormat: the format comes from rendering the chat template with a probe tool:
// Qwen's template (<tool_call> instructions) is Hermes; a template that shows the tool in a
// vocabulary with <|python_tag|> (Llama 3.1's) is Llama 3 JSON; in a vocabulary without it
// (testdata's tokenizer still calls id 128010 <|reserved_special_token_5|>, as Llama 3.0 did,
// which had no tool calling) it is none. (TestLlama3ToolCalls covers testdata's short Llama 3
// template, which ignores tools.)
func TestDetectToolFormat(t *testing.T) {
	qwen, err := testModel.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	lj, lc, err := testtok.Files("llama3")
	if err != nil {
		t.Fatal(err)
	}
	// A template that lists the tools (as Llama 3.1's does, in its own words) before the
	// conversation, and id 128010 named <|python_tag|> as in Llama 3.1's vocabulary.
	var cfg map[string]any
	if err := json.Unmarshal(lc, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = "{%- if tools %}{%- for t in tools %}{{- t | tojson }}{%- endfor %}{%- endif %}" + cfg["chat_template"].(string)
	withTools, _ := json.Marshal(cfg)
	lj31 := []byte(strings.ReplaceAll(string(lj), "<|reserved_special_token_5|>", "<|python_tag|>"))
	load := func(tj, tc []byte) *tokenizer.Tokenizer {
		tok, err := tokenizer.LoadJSON(tj, tc)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for name, c := range map[string]struct {
		tok  *tokenizer.Tokenizer
		want toolcall.Format
	}{
		"qwen":                        {qwen, toolcall.Hermes},
		"llama3.0 vocab, tools shown": {load(lj, withTools), toolcall.None},
		"llama3.1 vocab, tools shown": {load(lj31, withTools), toolcall.Llama3JSON},
	} {
		if got := detectToolFormat(c.tok); got != c.want {
			t.Errorf("%s: detected %v; want %v", name, got, c.want)
		}
	}
}

// TestLlama3ToolCalls runs a bundle with the real Llama 3.1 tokenizer: its template takes no
// tools, so tools are refused unless tool_choice is none; with --tool-call-parser llama3_json a
// forced call is written in Llama's JSON form and comes back as tool_calls, plain and streamed.
func TestLlama3ToolCalls(t *testing.T) {
	m, err := runtime.Open(testmodel.Bundle(t, "llama3-tiny", "f16"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the servers' cleanups, which run first
		b.Close()
		m.Close()
	})
	auto := startServer(t, Config{Model: m, Backend: b, Context: 512})
	resp, data := auto.do(t, "POST", "/v1/chat/completions", toolRequest(auto, "auto", nil))
	checkError(t, resp, data, 400, "tools", "unsupported_value")
	var got chatCompletion
	auto.post(t, "/v1/chat/completions", toolRequest(auto, "none", map[string]any{"max_tokens": 3}), &got)

	ts := startServer(t, Config{Model: m, Backend: b, Context: 512, ToolCallParser: "llama3_json"})
	body := toolRequest(ts, "required", map[string]any{"max_tokens": 150})
	ts.post(t, "/v1/chat/completions", body, &got)
	ch := got.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 {
		t.Fatalf("forced call: %+v (content %q)", ch, deref(ch.Message.Content))
	}
	for _, c := range ch.Message.ToolCalls {
		checkCall(t, c)
	}
	body["stream"] = true
	var names, args []string
	for _, ev := range ts.stream(t, "/v1/chat/completions", body) {
		var c chatChunk
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &c) != nil {
			continue
		}
		for _, d := range c.Choices[0].Delta.ToolCalls {
			if d.Function.Name != "" {
				names = append(names, d.Function.Name)
				args = append(args, "")
			}
			args[len(args)-1] += d.Function.Arguments
		}
	}
	if len(names) != len(ch.Message.ToolCalls) {
		t.Fatalf("streamed calls %v; plain %+v", names, ch.Message.ToolCalls)
	}
	for i, c := range ch.Message.ToolCalls {
		if names[i] != c.Function.Name || args[i] != c.Function.Arguments {
			t.Fatalf("streamed call %d %s(%s); plain %s(%s)", i, names[i], args[i], c.Function.Name, c.Function.Arguments)
		}
	}
	// Content only when max_tokens cut a further call short: its text comes back as is.
	if ch.Message.Content != nil && (!strings.HasPrefix(*ch.Message.Content, "{") || got.Usage.CompletionTokens != 150) {
		t.Fatalf("content %q beside the calls (%d tokens)", *ch.Message.Content, got.Usage.CompletionTokens)
	}
}
