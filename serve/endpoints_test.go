package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
)

// chatPrompt is the token ids the server computes for a one-message chat.
func chatPrompt(t *testing.T, ts *testServer, text string) []int {
	t.Helper()
	ids, e := ts.renderChat([]templateMessage{{Role: "user", Content: text}})
	if e != nil {
		t.Fatal(e)
	}
	return ids
}

func greedy(maxTokens int) runtime.GenerateOptions {
	return runtime.GenerateOptions{MaxTokens: maxTokens, Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}}
}

func TestModelsAndHealth(t *testing.T) {
	ts := startServer(t, Config{ModelID: "tiny"})
	var list modelList
	resp, data := ts.do(t, http.MethodGet, "/v1/models", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "tiny" || list.Data[0].Object != "model" ||
		list.Data[0].OwnedBy == "" || list.Data[0].Created == 0 || list.Data[0].Anepack == nil ||
		list.Data[0].Anepack.Context != testContext || list.Data[0].Anepack.Backend != "cpu" {
		t.Fatalf("models: %s", data)
	}
	// One model by id, by an alias (the bundle's file name), and an unknown one.
	for _, id := range []string{"tiny", "qwen2-tiny"} {
		var m modelObject
		resp, data = ts.do(t, http.MethodGet, "/v1/models/"+id, nil)
		if resp.StatusCode != 200 || json.Unmarshal(data, &m) != nil || m.ID != "tiny" {
			t.Fatalf("GET /v1/models/%s: %d %s", id, resp.StatusCode, data)
		}
	}
	resp, data = ts.do(t, http.MethodGet, "/v1/models/gpt-4o", nil)
	checkError(t, resp, data, 404, "model", "model_not_found")

	var h struct {
		Status string `json:"status"`
		Model  string `json:"model"`
		Stats
	}
	resp, data = ts.do(t, http.MethodGet, "/health", nil)
	if resp.StatusCode != 200 || json.Unmarshal(data, &h) != nil || h.Status != "ok" || h.Model != "tiny" || h.Requests < 4 {
		t.Fatalf("health: %d %s", resp.StatusCode, data)
	}
}

func TestChatCompletion(t *testing.T) {
	ts := startServer(t, Config{})
	want := reference(t, chatPrompt(t, ts, "Hello!"), greedy(8))
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", map[string]any{
		"model": ts.ModelID(), "messages": []map[string]any{{"role": "user", "content": "Hello!"}},
		"max_tokens": 8, "temperature": 0,
	}, &got)
	if !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" || got.Created == 0 || got.Model != ts.ModelID() {
		t.Fatalf("envelope: %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" || got.Choices[0].Message.Content == nil || *got.Choices[0].Message.Content != want.Text {
		t.Fatalf("choices %+v; want content %q", got.Choices, want.Text)
	}
	wantFinish := map[runtime.StopReason]string{runtime.StopEOS: "stop", runtime.StopLength: "length"}[want.Reason]
	if got.Choices[0].FinishReason != wantFinish {
		t.Fatalf("finish_reason %q; want %q (%s)", got.Choices[0].FinishReason, wantFinish, want.Reason)
	}
	u := got.Usage
	if u.PromptTokens != want.PromptTokens || u.CompletionTokens < len(want.Tokens) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v; want %d prompt tokens, %d completion tokens", u, want.PromptTokens, len(want.Tokens))
	}
	if x := got.Anepack; x == nil || x.PrefillTokensPerSecond <= 0 || x.TTFTMS <= 0 || x.StopReason != string(want.Reason) {
		t.Fatalf("anepack: %+v", got.Anepack)
	}

	// A system message, content parts, and the developer role all reach the template.
	ts.post(t, "/v1/chat/completions", map[string]any{
		"model": ts.ModelID(), "max_completion_tokens": 2, "messages": []map[string]any{
			{"role": "developer", "content": "Be brief."},
			{"role": "user", "content": []map[string]any{{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}}},
			{"role": "assistant", "content": "Hello."},
			{"role": "user", "content": "Again"},
		},
	}, &got)
	ids, e := ts.renderChat([]templateMessage{{"system", "Be brief."}, {"user", "Hi\nthere"}, {"assistant", "Hello."}, {"user", "Again"}})
	if e != nil {
		t.Fatal(e)
	}
	if got.Usage.PromptTokens != len(ids) || got.Usage.CompletionTokens > 2 || got.Choices[0].FinishReason == "" {
		t.Fatalf("usage %+v; want %d prompt tokens and at most 2 completion tokens", got.Usage, len(ids))
	}
}

func TestChatStream(t *testing.T) {
	ts := startServer(t, Config{})
	want := reference(t, chatPrompt(t, ts, "Tell me a story."), greedy(12))
	for _, includeUsage := range []bool{false, true} {
		body := map[string]any{"model": ts.ModelID(), "messages": []map[string]any{{"role": "user", "content": "Tell me a story."}},
			"max_tokens": 12, "temperature": 0, "stream": true}
		if includeUsage {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
		events := ts.stream(t, "/v1/chat/completions", body)
		var text strings.Builder
		var finish string
		var usageSeen *usage
		for i, ev := range events[:len(events)-1] {
			var raw map[string]json.RawMessage
			var c chatChunk
			var u struct {
				Usage *usage `json:"usage"`
			}
			if err := json.Unmarshal([]byte(ev), &raw); err != nil || json.Unmarshal([]byte(ev), &c) != nil || json.Unmarshal([]byte(ev), &u) != nil {
				t.Fatalf("event %d: %q", i, ev)
			}
			if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != ts.ModelID() {
				t.Fatalf("event %d: %s", i, ev)
			}
			if _, has := raw["usage"]; has != includeUsage {
				t.Fatalf("event %d: usage field present=%v with include_usage=%v: %s", i, has, includeUsage, ev)
			}
			if len(c.Choices) == 0 { // the usage chunk
				if !includeUsage || i != len(events)-2 || u.Usage == nil {
					t.Fatalf("event %d has no choices: %s", i, ev)
				}
				usageSeen = u.Usage
				continue
			}
			if u.Usage != nil {
				t.Fatalf("event %d: usage before the last chunk: %s", i, ev)
			}
			d := c.Choices[0].Delta
			if i == 0 && (d.Role != "assistant" || d.Content == nil || *d.Content != "") {
				t.Fatalf("first event: %s; want the assistant role", ev)
			}
			if d.Content != nil {
				text.WriteString(*d.Content)
			}
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
				if c.Anepack == nil || d.Content != nil {
					t.Fatalf("finish event: %s", ev)
				}
			}
		}
		if text.String() != want.Text || finish == "" {
			t.Fatalf("streamed %q (finish %q); want %q", text.String(), finish, want.Text)
		}
		if includeUsage && (usageSeen == nil || usageSeen.PromptTokens != want.PromptTokens || usageSeen.TotalTokens != usageSeen.PromptTokens+usageSeen.CompletionTokens) {
			t.Fatalf("usage %+v", usageSeen)
		}
	}
}

func TestCompletions(t *testing.T) {
	ts := startServer(t, Config{})
	tok, _ := testModel.Tokenizer()
	prompt := "The capital of France is"
	ids := tok.Encode(prompt)
	want := reference(t, ids, greedy(10))
	for _, p := range []any{prompt, ids, []string{prompt}, [][]int{ids}} {
		var got textCompletion
		ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": p, "max_tokens": 10, "temperature": 0}, &got)
		if !strings.HasPrefix(got.ID, "cmpl-") || got.Object != "text_completion" || len(got.Choices) != 1 ||
			got.Choices[0].Text != want.Text || got.Choices[0].FinishReason == nil || got.Usage.Usage == nil ||
			got.Usage.Usage.PromptTokens != len(ids) {
			t.Fatalf("prompt %v: %+v; want text %q", p, got, want.Text)
		}
	}
	events := ts.stream(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 10,
		"temperature": 0, "stream": true, "stream_options": map[string]bool{"include_usage": true}})
	var text strings.Builder
	var finish string
	var u *usage
	for _, ev := range events[:len(events)-1] {
		var c struct {
			Object  string       `json:"object"`
			Choices []textChoice `json:"choices"`
			Usage   *usage       `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil || c.Object != "text_completion" {
			t.Fatalf("event %q", ev)
		}
		if c.Usage != nil {
			u = c.Usage
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if text.String() != want.Text || finish == "" || u == nil || u.PromptTokens != len(ids) {
		t.Fatalf("streamed %q finish %q usage %+v; want %q", text.String(), finish, u, want.Text)
	}
}

func TestStopSeedAndLength(t *testing.T) {
	ts := startServer(t, Config{})
	tok, _ := testModel.Tokenizer()
	ids := tok.Encode("Once upon a time")
	full := reference(t, ids, runtime.GenerateOptions{MaxTokens: 12, EOS: []int{}, Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}})
	if len([]rune(full.Text)) < 6 {
		t.Fatalf("reference text %q is too short to cut", full.Text)
	}
	// Stop at a piece of the middle of the greedy text: the answer is what comes before it.
	r := []rune(full.Text)
	stop := string(r[len(r)/2 : len(r)/2+2])
	before, _, _ := strings.Cut(full.Text, stop)
	for _, stopField := range []any{stop, []string{"\x00never", stop}} {
		var got textCompletion
		ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 12,
			"temperature": 0, "stop": stopField, "ignore_eos": true}, &got)
		if got.Choices[0].Text != before || *got.Choices[0].FinishReason != "stop" {
			t.Fatalf("stop %q: text %q finish %q; want %q, stop", stopField, got.Choices[0].Text, *got.Choices[0].FinishReason, before)
		}
	}
	// max_tokens: finish_reason length, exactly that many tokens.
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 5, "temperature": 0, "ignore_eos": true}, &got)
	if *got.Choices[0].FinishReason != "length" || got.Usage.Usage.CompletionTokens != 5 {
		t.Fatalf("max_tokens 5: %+v %+v", got.Choices[0], got.Usage.Usage)
	}
	// Without max_tokens the completion may fill the context.
	small := startServer(t, Config{Context: 24})
	small.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": ids, "ignore_eos": true, "temperature": 0}, &got)
	if *got.Choices[0].FinishReason != "length" || got.Usage.Usage.CompletionTokens != 24-len(ids) {
		t.Fatalf("no max_tokens, context 24, %d prompt tokens: %+v %+v", len(ids), got.Choices[0], got.Usage.Usage)
	}
	// The same seed samples the same text; the server's answer equals the runtime's.
	body := map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 8, "temperature": 1.0, "top_k": 50, "top_p": 0.9, "seed": 42, "ignore_eos": true}
	var a, b textCompletion
	ts.post(t, "/v1/completions", body, &a)
	ts.post(t, "/v1/completions", body, &b)
	want := reference(t, ids, runtime.GenerateOptions{MaxTokens: 8, EOS: []int{}, Sampling: runtime.Sampling{Temperature: 1, TopK: 50, TopP: 0.9, RepetitionPenalty: 1, Seed: 42}})
	if a.Choices[0].Text != b.Choices[0].Text || a.Choices[0].Text != want.Text {
		t.Fatalf("seed 42: %q then %q; the runtime gives %q", a.Choices[0].Text, b.Choices[0].Text, want.Text)
	}
}

func TestRequestIDAndAccessLog(t *testing.T) {
	ts := startServer(t, Config{})
	resp, data := ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hi", "max_tokens": 3},
		"X-Request-Id", "trace-123")
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "trace-123" {
		t.Fatalf("status %d, X-Request-Id %q: %s", resp.StatusCode, resp.Header.Get("X-Request-Id"), data)
	}
	resp, _ = ts.do(t, http.MethodGet, "/health", nil, "X-Request-Id", "bad id with spaces")
	gen := resp.Header.Get("X-Request-Id")
	if len(gen) != 16 {
		t.Fatalf("generated request id %q", gen)
	}
	rec := ts.logs.accessRecord(t, "trace-123")
	if rec == nil {
		t.Fatalf("no access log record for trace-123 in %v", ts.logs.records(t))
	}
	for _, k := range []string{"method", "path", "status", "prompt_tokens", "completion_tokens", "ttft_ms", "duration_ms", "queue_ms", "finish"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("access log record lacks %q: %v", k, rec)
		}
	}
	if rec["method"] != "POST" || rec["path"] != "/v1/completions" || rec["status"] != 200.0 || rec["completion_tokens"].(float64) < 1 {
		t.Fatalf("access log record %v", rec)
	}
	if h := ts.logs.accessRecord(t, gen); h == nil || h["status"] != 200.0 {
		t.Fatalf("health record %v", h)
	}
	// One record per request.
	n := 0
	for _, r := range ts.logs.records(t) {
		if r["msg"] == "request" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d access records for 2 requests", n)
	}
}
