package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// dagSchema is an anyOf DAG of n levels ($defs/dK is anyOf [dK+1, dK+1], 2^n paths to one
// integer leaf), each definition compiled before the one that refers to it, so the nesting
// limit never applies. 2 KB at n = 21. The DAG is the value of the object's property "n" when
// object is set.
func dagSchema(n int, object bool) string {
	var defs, refs []string
	for k := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, k, k+1, k+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, n))
	for k := n; k >= 0; k-- {
		refs = append(refs, fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, k))
	}
	root := `"anyOf":[` + strings.Join(refs, ",") + `]`
	if object {
		root = `"type":"object","properties":{"n":{` + root + `}},"required":["n"],"additionalProperties":false`
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},` + root + `}`
}

// TestSchemaDAG sends a schema DAG of 40 levels as a response format and, wrapped in an object,
// as a forced tool's parameters. The recognizer used to follow every one of its 2^40 paths for
// each byte a token could start with, on the engine's goroutine: at 21 levels every stream of the
// server stalled for 45 s, at 24 the process ran out of memory. Both are answered now, with
// output that follows the schema, and an ordinary request after them too.
func TestSchemaDAG(t *testing.T) {
	ts := startServer(t, Config{Context: 2048}) // the tool's schema is in the prompt
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": "x"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "dag", "schema": json.RawMessage(dagSchema(40, false))}}}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", body, &got)
	if text := deref(got.Choices[0].Message.Content); strings.Trim(text, "-0123456789") != "" {
		t.Fatalf("response_format: %q is not an integer (or its prefix)", text)
	}

	body = map[string]any{"model": ts.ModelID(), "max_tokens": 40, "messages": []map[string]any{{"role": "user", "content": "x"}},
		"tool_choice": "required", "tools": []map[string]any{{"type": "function",
			"function": map[string]any{"name": "f", "parameters": json.RawMessage(dagSchema(40, true))}}}}
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forced tool with DAG parameters: %d %s", resp.StatusCode, data)
	}
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "still here", "max_tokens": 2}, &got)
}

// jsonChat is a chat request constrained to a JSON object.
func jsonChat(ts *testServer, maxTokens int, stream bool) map[string]any {
	return map[string]any{"model": ts.ModelID(), "max_tokens": maxTokens, "stream": stream,
		"messages":        []map[string]any{{"role": "user", "content": "x"}},
		"response_format": map[string]any{"type": "json_object"}}
}

// TestGrammarOffEngine holds a constrained request's mask computation and sends an ordinary
// request meanwhile: it runs to its end while the constrained one waits, and the constrained one
// finishes once its mask is let go. When masks were computed on the engine's goroutine, every
// generation of the server waited for each one (a wide anyOf made a concurrent ordinary request
// take 5.9 s instead of 0.05 s).
func TestGrammarOffEngine(t *testing.T) {
	ts := startServer(t, Config{Parallel: 2})
	release := make(chan struct{})
	var once sync.Once
	held := make(chan struct{}, 1)
	hold := func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-release
	}
	holdMask.Store(&hold)
	t.Cleanup(func() {
		once.Do(func() { close(release) })
		holdMask.Store(nil)
	})

	status := make(chan int, 1)
	go func() {
		data, _ := json.Marshal(jsonChat(ts, 4, false))
		resp, err := ts.client.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(data))
		if err != nil {
			status <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the constrained request's mask was never computed")
	}
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hello", "max_tokens": 8}, &got)
	if got.Usage.Usage == nil || got.Usage.Usage.CompletionTokens == 0 {
		t.Fatalf("the ordinary request generated nothing: %+v", got)
	}
	select {
	case s := <-status:
		t.Fatalf("the constrained request ended (%d) while its mask was held", s)
	default:
	}
	once.Do(func() { close(release) })
	if s := <-status; s != http.StatusOK {
		t.Fatalf("the constrained request: status %d once its mask was let go", s)
	}
}

// TestGrammarWorkLimit: a request whose grammar needs more recognizer steps per token than the
// server allows ends with a 400 naming response_format (an error event when streaming), never a
// 5xx, and the server goes on serving.
func TestGrammarWorkLimit(t *testing.T) {
	ts := startServer(t, Config{GrammarWork: 50})
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", jsonChat(ts, 4, false))
	checkError(t, resp, data, http.StatusBadRequest, "response_format", "invalid_value")
	if !strings.Contains(string(data), "more than 50 recognizer steps") {
		t.Fatalf("the error does not say what was exceeded: %s", data)
	}
	events := ts.stream(t, "/v1/chat/completions", jsonChat(ts, 4, true))
	last := events[len(events)-2]
	if !strings.Contains(last, `"error"`) || !strings.Contains(last, "recognizer steps") {
		t.Fatalf("the stream does not end with the grammar's error: %q", events)
	}
	for _, e := range events {
		if strings.Contains(e, `"finish_reason":"stop"`) {
			t.Fatalf("a stream ended by its grammar's error reports a clean stop: %q", events)
		}
	}
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hello", "max_tokens": 2}, &got)
	if st := ts.Stats(); st.Failed != 0 {
		t.Fatalf("a grammar over its work counted as a server failure: %+v", st)
	}
}

// TestStopWithStructuredOutput: stop strings do not cut a constrained answer. With
// response_format json_object and stop "\n" the answer was "{" with finish_reason "stop", with
// stop "{" an empty answer; a forced tool call with stop "arguments" came back without the call.
// The whole of such an answer is the constrained span, and stop strings apply outside it only,
// so an answer that stops is complete JSON, and a forced call is a call.
func TestStopWithStructuredOutput(t *testing.T) {
	ts := startServer(t, Config{Context: 512}) // the tools' descriptions make a long prompt
	for _, stop := range []any{"\n", "{", []string{`"`, ":", " "}} {
		var got chatCompletion
		ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 150, "stop": stop,
			"messages":        []map[string]any{{"role": "user", "content": "JSON please"}},
			"response_format": map[string]any{"type": "json_object"}}, &got)
		ch := got.Choices[0]
		content := deref(ch.Message.Content)
		var obj map[string]any
		switch err := json.Unmarshal([]byte(content), &obj); {
		case ch.FinishReason == "stop" && err != nil:
			t.Errorf("stop %q: finish_reason stop with %q, not a JSON object: %v", stop, content, err)
		case ch.FinishReason != "stop" && ch.FinishReason != "length":
			t.Errorf("stop %q: finish_reason %q", stop, ch.FinishReason)
		case !strings.HasPrefix(content, "{"):
			t.Errorf("stop %q: %q", stop, content)
		}
	}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", toolRequest(ts, "required", map[string]any{"stop": []string{"arguments", "name", "<tool_call>"}}), &got)
	if ch := got.Choices[0]; ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) == 0 {
		t.Fatalf("a forced tool call with stop strings: %+v (content %q)", ch, deref(ch.Message.Content))
	}
	for _, c := range got.Choices[0].Message.ToolCalls {
		checkCall(t, c)
	}
}

// TestImpossibleForcedToolError: forcing a call to a tool whose parameters nothing satisfies is
// a 400 that says so once (it used to repeat "the tools' parameter schemas:").
func TestImpossibleForcedToolError(t *testing.T) {
	ts := startServer(t, Config{})
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 4, "tool_choice": "required",
		"messages": []map[string]any{{"role": "user", "content": "x"}},
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "f",
			"parameters": json.RawMessage(`{"type":"object","required":["x"],"additionalProperties":false}`)}}}}
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", body)
	checkError(t, resp, data, http.StatusBadRequest, "tools", "invalid_value")
	if n := strings.Count(string(data), "parameter schemas"); n != 1 || !strings.Contains(string(data), "no value can satisfy") {
		t.Fatalf("%s: want the reason, with \"parameter schemas\" once", data)
	}
}
