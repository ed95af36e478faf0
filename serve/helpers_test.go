package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
)

// testContext is the sessions' context in tests: small, so overflow is easy to provoke.
const testContext = 256

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON log records so far.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// accessRecord returns the access-log record of request id, or nil.
func (b *syncBuffer) accessRecord(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, r := range b.records(t) {
		if r["msg"] == "request" && r["request_id"] == id {
			return r
		}
	}
	return nil
}

// testServer is a Server on a real loopback listener.
type testServer struct {
	*Server
	URL    string
	logs   *syncBuffer
	client *http.Client
	stop   context.CancelFunc
	done   chan error
}

// startServer serves the test model (or cfg.Model) on 127.0.0.1 with cfg's settings until the
// test ends. Context and Logger are filled in.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	logs := new(syncBuffer)
	if cfg.Model == nil {
		cfg.Model, cfg.Backend = testModel, testBackend
	}
	if cfg.Context == 0 {
		cfg.Context = testContext
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, URL: "http://" + ln.Addr().String(), logs: logs, stop: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}}
	go func() { ts.done <- srv.Serve(ctx, ln, 0) }()
	t.Cleanup(func() {
		ts.shutdown(t)
		ts.client.CloseIdleConnections()
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// shutdown stops the server and waits for Serve to return.
func (ts *testServer) shutdown(t testing.TB) {
	t.Helper()
	ts.stop()
	select {
	case err, ok := <-ts.done:
		if ok && err != nil {
			t.Errorf("Serve: %v", err)
		}
		close(ts.done)
	case <-time.After(20 * time.Second):
		t.Error("Serve did not return within 20s of its context ending")
	}
}

// do sends a request; body is JSON-encoded unless it is a string or nil.
func (ts *testServer) do(t *testing.T, method, path string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp := ts.open(t, context.Background(), method, path, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the response: %v", method, path, err)
	}
	return resp, data
}

// open sends a request and returns the response with its body unread.
func (ts *testServer) open(t *testing.T, ctx context.Context, method, path string, body any, header ...string) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// post sends a JSON body and decodes a 200 answer into out.
func (ts *testServer) post(t *testing.T, path string, body, out any) {
	t.Helper()
	resp, data := ts.do(t, http.MethodPost, path, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, data)
	}
}

// readEvents reads a server-sent event stream to its end: the data of each event, "[DONE]"
// included.
func readEvents(r io.Reader) ([]string, error) {
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			events = append(events, strings.TrimPrefix(line, "data: "))
		default:
			return events, errors.New("unexpected line in the event stream: " + line)
		}
	}
	return events, sc.Err()
}

// stream posts a streaming request and returns its events, checking the stream's headers.
func (ts *testServer) stream(t *testing.T, path string, body any) []string {
	t.Helper()
	resp := ts.open(t, context.Background(), http.MethodPost, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q; want text/event-stream", ct)
	}
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("the stream does not end with [DONE]: %q", events)
	}
	return events
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reference generates in-process, on a fresh session, what the server should answer.
func reference(t *testing.T, prompt []int, opts runtime.GenerateOptions) *runtime.Result {
	t.Helper()
	sess, err := runtime.NewSession(testModel, testBackend, testContext)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.Generate(context.Background(), prompt, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readAll reads and closes a response body.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
