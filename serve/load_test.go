package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoad sends 256 requests from 32 concurrent clients — chat and text completions, streaming
// and not, over four prompts — to a server with 8 sessions decoding in one batch and 32 queue
// places, four times over, and checks that every answer is exactly the runtime's greedy text for its
// prompt (sessions never mix up their caches), that nothing failed or was refused, that no
// goroutine is left behind and that the live heap does not grow from round to round.
func TestLoad(t *testing.T) {
	const (
		clients  = 32
		requests = 256
		tokens   = 2
	)
	ts := startServer(t, Config{Parallel: 8, Queue: 32})
	prompts := []string{"Hello", "What is Go?", "Write a haiku about the sea.", "2+2="}
	tok, _ := testModel.Tokenizer()
	wantChat := make([]string, len(prompts))
	wantText := make([]string, len(prompts))
	for i, p := range prompts {
		wantChat[i] = reference(t, chatPrompt(t, ts, p), greedy(tokens)).Text
		wantText[i] = reference(t, tok.Encode(p), greedy(tokens)).Text
	}

	// Warm up the connections, then count goroutines at rest.
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "warm", "max_tokens": 1}, &got)
	ts.client.CloseIdleConnections()
	before := quietGoroutines()

	var heap [4]uint64 // the live heap after each round
	for round := range len(heap) {
		jobs := make(chan int)
		errs := make(chan error, requests)
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for i := range jobs {
					if err := loadRequest(ts, i, prompts, wantChat, wantText, tokens); err != nil {
						errs <- fmt.Errorf("round %d, request %d: %w", round, i, err)
					}
				}
			})
		}
		for i := range requests {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		close(errs)
		elapsed := time.Since(start)
		for err := range errs {
			t.Error(err)
		}
		st := ts.Stats()
		if st.Generations != uint64((round+1)*requests+1) || st.Rejected != 0 || st.Failed != 0 || st.Cancelled != 0 || st.TimedOut != 0 || st.Running != 0 || st.Waiting != 0 {
			t.Fatalf("stats after round %d: %+v", round, st)
		}
		ts.client.CloseIdleConnections()
		settledGoroutines(before)
		heap[round] = liveHeap()
		t.Logf("round %d: %d requests from %d clients in %v (%.0f requests/s); live heap %.1f MiB", round, requests, clients,
			elapsed.Round(time.Millisecond), requests/elapsed.Seconds(), float64(heap[round])/(1<<20))
	}
	// The first round allocated every session's cache and the pools; later rounds of the same
	// requests must not need more. The live heap after a round varies by a few MiB (idle
	// connections, pooled buffers), so the least of the last two rounds is held to the least of
	// the first two plus 4 MiB: a leak of 8 KiB per request (512 requests later) fails.
	first, last := min(heap[0], heap[1]), min(heap[2], heap[3])
	if last > first+4<<20 {
		t.Errorf("live heap after each round %v: it grows with the requests served", heap)
	}

	ts.client.CloseIdleConnections()
	if after := settledGoroutines(before); after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before the load, %d after:\n%s", before, after, buf[:goruntime.Stack(buf, true)])
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	var m goruntime.MemStats
	goruntime.GC()
	goruntime.GC() // a second cycle frees what the first one's finalizers released
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// quietGoroutines returns the goroutine count once it has not changed for 100 ms (closed
// connections take a moment to wind down).
func quietGoroutines() int {
	n := goruntime.NumGoroutine()
	for stable := 0; stable < 10; {
		time.Sleep(10 * time.Millisecond)
		if m := goruntime.NumGoroutine(); m != n {
			n, stable = m, 0
			continue
		}
		stable++
	}
	return n
}

// settledGoroutines waits up to 5 s for the goroutine count to drop to target and returns it.
func settledGoroutines(target int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := goruntime.NumGoroutine()
		if n <= target || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loadRequest sends request i of the load test: chat or text, streaming or not, by i.
func loadRequest(ts *testServer, i int, prompts, wantChat, wantText []string, tokens int) error {
	p := i % len(prompts)
	chat := i%2 == 0
	stream := (i/2)%2 == 0
	body := map[string]any{"model": ts.ModelID(), "max_tokens": tokens, "temperature": 0, "stream": stream}
	path, want := "/v1/completions", wantText[p]
	if chat {
		path, want = "/v1/chat/completions", wantChat[p]
		body["messages"] = []map[string]string{{"role": "user", "content": prompts[p]}}
	} else {
		body["prompt"] = prompts[p]
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, ts.URL+path, strings.NewReader(string(data)))
	if err != nil {
		return err
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var text strings.Builder
	finish := ""
	collect := func(raw []byte) error {
		var c struct {
			Choices []struct {
				Text         string `json:"text"`
				Message      *struct{ Content string }
				Delta        *struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("%v in %s", err, raw)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.Message != nil {
				text.WriteString(ch.Message.Content)
			}
			if ch.Delta != nil {
				text.WriteString(ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		return nil
	}
	if stream {
		events, err := readEvents(resp.Body)
		if err != nil {
			return err
		}
		if len(events) == 0 || events[len(events)-1] != "[DONE]" {
			return fmt.Errorf("stream without [DONE]: %q", events)
		}
		for _, ev := range events[:len(events)-1] {
			if err := collect([]byte(ev)); err != nil {
				return err
			}
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if err := collect(b); err != nil {
			return err
		}
	}
	if text.String() != want || finish == "" {
		return fmt.Errorf("%s %q (stream %v): got %q (finish %q), want %q", path, prompts[p], stream, text.String(), finish, want)
	}
	return nil
}
