package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// longStream opens a streaming completion of n tokens that will not stop early, and returns the
// response after its first event.
func (ts *testServer) longStream(t *testing.T, ctx context.Context, n int) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp := ts.open(t, ctx, http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Count:",
		"max_tokens": n, "ignore_eos": true, "temperature": 0, "stream": true})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event: %q %v", line, err)
	}
	return resp, br
}

func TestQueueFull(t *testing.T) {
	// A long context, so that A cannot finish before the test is done with it on a fast machine.
	ts := startServer(t, Config{Parallel: 1, Queue: 1, Context: 4096})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A holds the one session; B waits in the one queue place; C is refused.
	a, _ := ts.longStream(t, ctx, 4000)
	defer a.Body.Close()
	type answer struct {
		status int
		body   []byte
	}
	bDone := make(chan answer, 1)
	go func() {
		resp := ts.open(t, context.Background(), http.MethodPost, "/v1/completions",
			map[string]any{"model": ts.ModelID(), "prompt": "B", "max_tokens": 2})
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bDone <- answer{resp.StatusCode, data}
	}()
	waitFor(t, "B to wait in the queue", func() bool { return ts.Stats().Waiting == 1 })
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions",
		map[string]any{"model": ts.ModelID(), "messages": []map[string]string{{"role": "user", "content": "C"}}, "max_tokens": 2})
	checkError(t, resp, data, 429, "", "queue_full")
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	if st := ts.Stats(); st.Rejected != 1 || st.Running != 1 || st.Waiting != 1 {
		t.Fatalf("stats %+v", st)
	}
	cancel() // A's client goes away: its session passes to B
	select {
	case b := <-bDone:
		if b.status != 200 {
			t.Fatalf("B: %d %s", b.status, b.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("B did not get the session after A was cancelled")
	}
}

func TestDisconnectCancels(t *testing.T) {
	ts := startServer(t, Config{Parallel: 1})
	const n = 240
	t.Run("stream", func(t *testing.T) {
		before := ts.Stats().Cancelled
		resp, br := ts.longStream(t, context.Background(), n)
		id := resp.Header.Get("X-Request-Id")
		br.ReadString('\n') // a couple of events
		br.ReadString('\n')
		closed := time.Now()
		resp.Body.Close() // mid-stream: the client hangs up
		waitFor(t, "the generation to be cancelled", func() bool { st := ts.Stats(); return st.Cancelled == before+1 && st.Running == 0 })
		stopped := time.Since(closed)
		rec := ts.logs.accessRecord(t, id)
		if rec == nil || rec["status"] != float64(statusClientGone) || rec["finish"] != "cancelled" || rec["completion_tokens"].(float64) >= n {
			t.Fatalf("access record %v", rec)
		}
		// At a few ms a token, finishing would take seconds; cancelling takes one token.
		if stopped > time.Second {
			t.Fatalf("the generation stopped %v after the client hung up", stopped)
		}
		t.Logf("stopped %v after the disconnect, after %v of %d tokens", stopped, rec["completion_tokens"], n)
	})
	t.Run("non-stream", func(t *testing.T) {
		before := ts.Stats().Cancelled
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(
				`{"model":"`+ts.ModelID()+`","prompt":"Count:","max_tokens":`+strconv.Itoa(n)+`,"ignore_eos":true}`))
			if resp, err := ts.client.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("the request finished (%d) before the client hung up", resp.StatusCode)
			}
		}()
		waitFor(t, "the generation to start", func() bool { return ts.Stats().Running == 1 })
		cancel()
		<-done
		waitFor(t, "the generation to be cancelled", func() bool { st := ts.Stats(); return st.Cancelled == before+1 && st.Running == 0 })
	})
	// The session is usable afterwards.
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hi", "max_tokens": 2}, &got)
}

func TestTimeout(t *testing.T) {
	ts := startServer(t, Config{Parallel: 1, Timeout: 150 * time.Millisecond, Context: 4096})
	body := map[string]any{"model": ts.ModelID(), "prompt": "Count:", "max_tokens": 4000, "ignore_eos": true}
	resp, data := ts.do(t, http.MethodPost, "/v1/completions", body)
	checkError(t, resp, data, 504, "", "timeout")
	body["stream"] = true
	events := ts.stream(t, "/v1/completions", body)
	var last errorBody
	if len(events) < 2 || json.Unmarshal([]byte(events[len(events)-2]), &last) != nil || last.Error == nil || last.Error.Type != typeTimeout {
		t.Fatalf("stream did not end with a timeout error event: %q", events[max(0, len(events)-3):])
	}
	if st := ts.Stats(); st.TimedOut != 2 || st.Running != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestShutdownDrains(t *testing.T) {
	ts := startServer(t, Config{Parallel: 1})
	const n = 200
	resp, br := ts.longStream(t, context.Background(), n)
	defer resp.Body.Close()
	// A second request waits for the session.
	queued := make(chan int, 1)
	go func() {
		resp := ts.open(t, context.Background(), http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hi", "max_tokens": 3})
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		queued <- resp.StatusCode
	}()
	waitFor(t, "the second request to queue", func() bool { return ts.Stats().Waiting == 1 })

	served := make(chan error, 1)
	go func() { ts.stop(); served <- <-ts.done }()
	// Draining: the listener is closed to new connections...
	waitFor(t, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.URL, "http://"), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with requests in flight", err)
	default:
	}
	// ...while the stream in flight runs to its end.
	events, err := readEvents(br)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 3 || events[len(events)-1] != "[DONE]" || !strings.Contains(events[len(events)-2], `"finish_reason":"length"`) {
		t.Fatalf("the drained stream ended with %q", events[max(0, len(events)-2):])
	}
	if code := <-queued; code != 200 {
		t.Fatalf("the queued request got %d", code)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after draining")
	}
	ts.done <- nil // for the cleanup's shutdown
	if st := ts.Stats(); st.Generations != 2 || st.Cancelled != 0 {
		t.Fatalf("stats %+v", st)
	}
	// After Close, the handler refuses work.
	ts.Close()
	rec := httptest.NewRecorder()
	ts.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %d %s", rec.Code, rec.Body)
	}
}
