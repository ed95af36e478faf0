package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
)

// benchPrompt and benchTokens make the short completion every benchmark runs: greedy, never
// stopping early, so every run does the same work.
const (
	benchPrompt = "Write one sentence about the sea."
	benchTokens = 8
)

// BenchmarkInProcess is the generation the server benchmarks wrap, run directly: encode the
// prompt, Session.Generate (prefix cache reused, as in the server), decode.
func BenchmarkInProcess(b *testing.B) {
	sess, err := runtime.NewSession(testModel, testBackend, testContext)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	tok, _ := testModel.Tokenizer()
	opts := runtime.GenerateOptions{MaxTokens: benchTokens, EOS: []int{}, Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}}
	b.ResetTimer()
	for b.Loop() {
		res, err := sess.Generate(context.Background(), tok.Encode(benchPrompt), opts)
		if err != nil || len(res.Tokens) != benchTokens {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkHTTP runs the same completion through the server, one request at a time over a
// kept-alive connection, and reports the server's overhead per request measured inside each
// request: client latency minus the time spent in Generate (anepack.generate_ms).
func BenchmarkHTTP(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			ts := startServer(b, Config{Parallel: 1})
			body := benchBody(ts, stream)
			var overhead []float64
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				genMS, err := benchRequest(ts, body, stream)
				if err != nil {
					b.Fatal(err)
				}
				overhead = append(overhead, float64(time.Since(t0).Microseconds())/1000-genMS)
			}
			b.ReportMetric(percentile(overhead, 50), "overhead-p50-ms")
			b.ReportMetric(percentile(overhead, 99), "overhead-p99-ms")
		})
	}
}

// BenchmarkConcurrent8 has 8 clients send short completions (half of them streaming) as fast
// as they can, with 1 and 4 sessions, and reports requests/s and the latency percentiles.
func BenchmarkConcurrent8(b *testing.B) {
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			ts := startServer(b, Config{Parallel: parallel, Queue: 64})
			bodies := [2]string{benchBody(ts, false), benchBody(ts, true)}
			var mu sync.Mutex
			var lat []float64
			next := make(chan int)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range 8 {
				wg.Go(func() {
					for i := range next {
						t0 := time.Now()
						if _, err := benchRequest(ts, bodies[i%2], i%2 == 1); err != nil {
							b.Error(err)
						}
						d := float64(time.Since(t0).Microseconds()) / 1000
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				})
			}
			n := 0
			for b.Loop() {
				next <- n
				n++
			}
			close(next)
			wg.Wait()
			elapsed := time.Since(start)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "req/s")
			b.ReportMetric(percentile(lat, 50), "p50-ms")
			b.ReportMetric(percentile(lat, 99), "p99-ms")
		})
	}
}

func benchBody(ts *testServer, stream bool) string {
	data, _ := json.Marshal(map[string]any{"model": ts.ModelID(), "prompt": benchPrompt, "max_tokens": benchTokens,
		"temperature": 0, "ignore_eos": true, "stream": stream})
	return string(data)
}

// benchRequest sends one completion and returns its anepack.generate_ms.
func benchRequest(ts *testServer, body string, stream bool) (float64, error) {
	resp, err := ts.client.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	if stream { // the extras ride on the finish event, the second to last before [DONE]
		events, err := readEvents(strings.NewReader(string(data)))
		if err != nil || len(events) < 2 {
			return 0, fmt.Errorf("stream %q: %v", data, err)
		}
		data = []byte(events[len(events)-2])
	}
	var r struct{ Anepack *extras }
	if err := json.Unmarshal(data, &r); err != nil || r.Anepack == nil {
		return 0, fmt.Errorf("no anepack extras in %s", data)
	}
	return r.Anepack.GenerateMS, nil
}

// percentile returns the p-th percentile (nearest rank) of v.
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
