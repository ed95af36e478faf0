package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
)

// clientDir holds the Node script and its pinned openai package (installed by `make test`).
const clientDir = "testdata/openai-client"

// TestOpenAINodeClient runs the official openai npm package — a client nobody here wrote —
// against the server on a real listener: models, chat, streaming chat, completions (plain and
// streaming) and a refused request, with an API key. The texts must equal the runtime's own
// greedy generation for the same prompts.
func TestOpenAINodeClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(clientDir, "node_modules", "openai", "package.json")); err != nil {
		t.Fatalf("the openai npm package is not installed in serve/%s (%v): run `make test`, or `cd serve/%s && npm ci --no-audit --no-fund`", clientDir, err, clientDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the openai client test: %v", err)
	}
	const key = "sk-anepack-test"
	ts := startServer(t, Config{APIKey: key, ModelID: "anepack/qwen2-tiny"})
	const prompt = "Say hello."

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = clientDir
	cmd.Env = append(os.Environ(), "ANEPACK_BASE_URL="+ts.URL+"/v1", "ANEPACK_API_KEY="+key,
		"ANEPACK_MODEL="+ts.ModelID(), "ANEPACK_PROMPT="+prompt)
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
}
