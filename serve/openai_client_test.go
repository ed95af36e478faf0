package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
)

// clientDir holds the Node script and its pinned openai package (installed by `make test`).
const clientDir = "testdata/openai-client"

// nodeSchema is the json_schema of the client's structured-output requests.
const nodeSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":10},"age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2},"address":{"type":"object","properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false}},"required":["name","age","address"],"additionalProperties":false}`

// TestOpenAINodeClient runs the official openai npm package — a client nobody here wrote —
// against the server on a real listener: models, chat, streaming chat, completions (plain and
// streaming) and a refused request, with an API key. The texts must equal the runtime's own
// greedy generation for the same prompts. Then the features the client exercises: 404 for an unknown
// model; json_schema answers validated by ajv; a forced tool call, its round trip, and the same
// call streamed and rebuilt by the client's own stream accumulator; logprobs on both endpoints;
// n=2; /metrics parsed by parse-prometheus-text-format.
func TestOpenAINodeClient(t *testing.T) {
	for _, pkg := range []string{"openai", "ajv", "parse-prometheus-text-format"} {
		if _, err := os.Stat(filepath.Join(clientDir, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("the %s npm package is not installed in serve/%s (%v): run `make test`, or `cd serve/%s && npm ci --no-audit --no-fund`", pkg, clientDir, err, clientDir)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the openai client test: %v", err)
	}
	const key = "sk-anepack-test"
	ts := startServer(t, Config{APIKey: key, ModelID: "anepack/qwen2-tiny", Context: 512, Parallel: 8})
	batchPrompts := []string{"One.", "Two words.", "Three words here.", "What is four?", "Five.", "Six is a number.", "Seven", "Eight, at last."}
	batchJSON, err := json.Marshal(batchPrompts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := json.Marshal(testTools())
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Say hello."

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), "ANEPACK_BASE_URL="+ts.URL+"/v1", "ANEPACK_API_KEY="+key,
		"ANEPACK_MODEL="+ts.ModelID(), "ANEPACK_PROMPT="+prompt, "ANEPACK_SCHEMA="+nodeSchema, "ANEPACK_TOOLS="+string(tools), "ANEPACK_BATCH_PROMPTS="+string(batchJSON))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var got struct {
		Models []string `json:"models"`
		Model  string   `json:"model"`
		Chat   struct {
			ID, Object, Content, Role string
			FinishReason              string `json:"finish_reason"`
			Usage                     usage
			Anepack                   *extras
		} `json:"chat"`
		ChatStream struct {
			Content      string `json:"content"`
			FinishReason string `json:"finish_reason"`
			Usage        *usage `json:"usage"`
			Chunks       int    `json:"chunks"`
		} `json:"chat_stream"`
		Completion struct {
			ID, Object, Text string
			FinishReason     string `json:"finish_reason"`
			Usage            usage  `json:"usage"`
		} `json:"completion"`
		CompletionStream struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"completion_stream"`
		BadRequest struct {
			Class, Type, Param, Code, Message string
			Status                            int
		} `json:"bad_request"`
		NotFound struct {
			Class, Type, Param, Code string
			Status                   int
		} `json:"not_found"`
		Structured []struct {
			FinishReason string          `json:"finish_reason"`
			Content      string          `json:"content"`
			Valid        bool            `json:"valid"`
			Errors       json.RawMessage `json:"errors"`
		} `json:"structured"`
		ToolCall struct {
			FinishReason string         `json:"finish_reason"`
			Message      chatMessageOut `json:"message"`
		} `json:"tool_call"`
		ToolRoundTrip struct {
			FinishReason string `json:"finish_reason"`
			PromptTokens int    `json:"prompt_tokens"`
		} `json:"tool_round_trip"`
		ToolStream struct {
			FinishReason string         `json:"finish_reason"`
			Message      chatMessageOut `json:"message"`
		} `json:"tool_stream"`
		ChatLogprobs       *chatLogprobs `json:"chat_logprobs"`
		CompletionLogprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"completion_logprobs"`
		Choices []int `json:"choices"`
		Batch   struct {
			Texts     []string `json:"texts"`
			Passes    int      `json:"passes"`
			Sequences int      `json:"sequences"`
		} `json:"batch"`
		Metrics struct {
			Status      int    `json:"status"`
			ContentType string `json:"content_type"`
			Families    []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Metrics []struct {
					Labels  map[string]string `json:"labels"`
					Value   string            `json:"value"`
					Buckets map[string]string `json:"buckets"`
					Count   string            `json:"count"`
					Sum     string            `json:"sum"`
				} `json:"metrics"`
			} `json:"families"`
		} `json:"metrics"`
	}
	var version struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &version); err != nil || version.Version != "6.49.0" {
		t.Errorf("the client reports openai version %q; package.json pins 6.49.0 (%v)", version.Version, err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output: %v\n%s", err, stdout.String())
	}
	t.Logf("client output: %s", stdout.String())

	ids, e := ts.renderChat([]templateMessage{{"system", "You are a helpful assistant."}, {"user", prompt}})
	if e != nil {
		t.Fatal(e)
	}
	wantChat := reference(t, ids, greedy(8))
	tok, _ := testModel.Tokenizer()
	wantText := reference(t, tok.Encode(prompt), greedy(8))
	finish := func(r *runtime.Result) string {
		if r.Reason == runtime.StopLength {
			return "length"
		}
		return "stop"
	}

	if len(got.Models) != 1 || got.Models[0] != ts.ModelID() || got.Model != ts.ModelID() {
		t.Errorf("models %q, retrieve %q; want %q", got.Models, got.Model, ts.ModelID())
	}
	c := got.Chat
	if c.Object != "chat.completion" || c.Role != "assistant" || c.Content != wantChat.Text || c.FinishReason != finish(wantChat) ||
		c.Usage.PromptTokens != len(ids) || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || c.Anepack == nil {
		t.Errorf("chat: %+v; want content %q finish %s", c, wantChat.Text, finish(wantChat))
	}
	cs := got.ChatStream
	if cs.Content != wantChat.Text || cs.FinishReason != finish(wantChat) || cs.Usage == nil || cs.Usage.PromptTokens != len(ids) || cs.Chunks < 3 {
		t.Errorf("streaming chat: %+v; want content %q", cs, wantChat.Text)
	}
	if got.Completion.Object != "text_completion" || got.Completion.Text != wantText.Text || got.Completion.FinishReason != finish(wantText) ||
		got.Completion.Usage.PromptTokens != wantText.PromptTokens {
		t.Errorf("completion: %+v; want text %q", got.Completion, wantText.Text)
	}
	if got.CompletionStream.Text != wantText.Text || got.CompletionStream.FinishReason != finish(wantText) {
		t.Errorf("streaming completion: %+v; want text %q", got.CompletionStream, wantText.Text)
	}
	b := got.BadRequest
	if b.Class != "BadRequestError" || b.Status != 400 || b.Param != "temperature" || b.Code != "invalid_value" || b.Type != typeInvalidRequest || b.Message == "" {
		t.Errorf("bad request as the client saw it: %+v", b)
	}
	checkNodeFeatures(t, ts, &got.NotFound, got.Structured, got.ToolCall.FinishReason, got.ToolCall.Message,
		got.ToolRoundTrip.FinishReason, got.ToolRoundTrip.PromptTokens, got.ToolStream.FinishReason, got.ToolStream.Message)
	if lp := got.ChatLogprobs; lp == nil || len(lp.Content) == 0 || len(lp.Content) > 4 {
		t.Errorf("chat logprobs as the client saw them: %+v", lp)
	} else {
		for _, e := range lp.Content {
			if e.Logprob > 0 || len(e.Bytes) == 0 || len(e.TopLogprobs) != 2 || e.TopLogprobs[0].Logprob != e.Logprob {
				t.Errorf("chat logprob entry %+v (greedy: the token is the first alternative)", e)
			}
		}
	}
	if c := got.CompletionLogprobs; c == nil || len(c.Tokens) == 0 || len(c.TokenLogprobs) != len(c.Tokens) || len(c.TopLogprobs) != len(c.Tokens) || len(c.TextOffset) != len(c.Tokens) || c.TextOffset[0] != 0 {
		t.Errorf("completion logprobs as the client saw them: %+v", c)
	}
	if len(got.Choices) != 2 || got.Choices[0] != 0 || got.Choices[1] != 1 {
		t.Errorf("n=2: choices %v", got.Choices)
	}
	// Continuous batching: each concurrent stream got exactly its greedy text alone, and the
	// passes held several sequences at a time.
	for i, p := range batchPrompts {
		ids, e := ts.renderChat([]templateMessage{{"user", p}})
		if e != nil {
			t.Fatal(e)
		}
		if want := reference(t, ids, greedy(16)).Text; i >= len(got.Batch.Texts) || got.Batch.Texts[i] != want {
			t.Errorf("concurrent stream %d (%q): got %q; alone it generates %q", i, p, got.Batch.Texts, want)
		}
	}
	if b := got.Batch; b.Passes == 0 || float64(b.Sequences)/float64(b.Passes) < 2 {
		t.Errorf("%d concurrent streams ran %d sequences in %d passes; expected passes shared by several", len(batchPrompts), b.Sequences, b.Passes)
	}
	t.Logf("%d concurrent streams: %d passes, %.2f sequences per pass", len(batchPrompts), got.Batch.Passes, float64(got.Batch.Sequences)/float64(got.Batch.Passes))
	m := got.Metrics
	types := map[string]string{}
	for _, f := range m.Families {
		types[f.Name] = f.Type
		if f.Name == "anepack_requests_total" {
			found := false
			for _, s := range f.Metrics {
				if s.Labels["endpoint"] == "/v1/chat/completions" && s.Labels["status"] == "200" && s.Value != "0" {
					found = true
				}
			}
			if !found {
				t.Errorf("anepack_requests_total has no chat requests with status 200: %+v", f.Metrics)
			}
		}
		if f.Name == "anepack_time_to_first_token_seconds" && (len(f.Metrics) != 1 || f.Metrics[0].Count == "0" || f.Metrics[0].Buckets["+Inf"] != f.Metrics[0].Count) {
			t.Errorf("time to first token as parsed: %+v", f.Metrics)
		}
	}
	for name, typ := range map[string]string{"anepack_requests_total": "COUNTER", "anepack_prompt_tokens_total": "COUNTER",
		"anepack_completion_tokens_total": "COUNTER", "anepack_time_to_first_token_seconds": "HISTOGRAM",
		"anepack_inter_token_latency_seconds": "HISTOGRAM", "anepack_request_duration_seconds": "HISTOGRAM",
		"anepack_queue_depth": "GAUGE", "anepack_active_sequences": "GAUGE", "anepack_kv_cache_bytes": "GAUGE"} {
		if types[name] != typ {
			t.Errorf("/metrics as parse-prometheus-text-format read it: %s is %q; want %s", name, types[name], typ)
		}
	}
	if m.Status != 200 || !strings.HasPrefix(m.ContentType, "text/plain; version=0.0.4") {
		t.Errorf("/metrics: status %d, content type %q", m.Status, m.ContentType)
	}
}

// checkNodeFeatures checks what the client got from the structured-output and tool-call
// requests.
func checkNodeFeatures(t *testing.T, ts *testServer, nf *struct {
	Class, Type, Param, Code string
	Status                   int
}, structured []struct {
	FinishReason string          `json:"finish_reason"`
	Content      string          `json:"content"`
	Valid        bool            `json:"valid"`
	Errors       json.RawMessage `json:"errors"`
}, callFinish string, call chatMessageOut, tripFinish string, tripPrompt int, streamFinish string, streamed chatMessageOut) {
	t.Helper()
	if nf.Class != "NotFoundError" || nf.Status != 404 || nf.Code != "model_not_found" || nf.Param != "model" || nf.Type != typeInvalidRequest {
		t.Errorf("unknown model as the client saw it: %+v", *nf)
	}
	stops := 0
	for i, s := range structured {
		switch {
		case s.FinishReason == "stop" && !s.Valid:
			t.Errorf("structured answer %d %q does not validate with ajv: %s", i, s.Content, s.Errors)
		case s.FinishReason == "stop":
			stops++
		case s.FinishReason != "length":
			t.Errorf("structured answer %d: finish_reason %q", i, s.FinishReason)
		}
	}
	if len(structured) != 6 || stops < 4 {
		t.Errorf("%d of %d structured answers finished", stops, len(structured))
	}
	if callFinish != "tool_calls" || len(call.ToolCalls) != 1 || call.Role != "assistant" {
		t.Fatalf("forced tool call as the client saw it: %s %+v", callFinish, call)
	}
	checkCall(t, call.ToolCalls[0])
	if tripFinish == "" || tripPrompt <= 0 {
		t.Errorf("the tool round trip: finish %q, %d prompt tokens", tripFinish, tripPrompt)
	}
	if streamFinish != "tool_calls" || len(streamed.ToolCalls) != 1 || streamed.ToolCalls[0].Function != call.ToolCalls[0].Function {
		t.Errorf("the streamed call as the client's accumulator rebuilt it: %s %+v; the plain answer: %+v", streamFinish, streamed.ToolCalls, call.ToolCalls)
	}
}
