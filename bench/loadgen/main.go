// Command loadgen measures an OpenAI-compatible server under concurrent streaming load: anerun
// serve, llama-server, vLLM. Each of -clients clients sends -requests/-clients streamed
// completions one after the other (greedy, ignore_eos, exactly -max-tokens each) and the
// generator reports the total generated tokens per second over the run's wall time, time to
// first token (p50, p99), inter-token time (p50, p99), what failed and, with -pid, the server's
// resident memory before, at most and after. It stops sending after -duration, lets the
// requests in flight finish (for at most a minute more) and reports them.
//
// With -disconnect F a fraction F of the streams is dropped by the client after a random number
// of tokens, as clients that go away do; they count as disconnected, not failed. With
// -hostile-every D the generator also sends, every D and without waiting for the answers, one
// chat request of those in hostile.go (constrained outputs built to be expensive, parameter
// combinations that broke the output) and reports how they were answered; a 5xx to one of
// them fails the run like a failed stream.
//
//	go run ./bench/loadgen -url http://127.0.0.1:8000/v1 -model M -clients 8 -requests 32
//	go run ./bench/loadgen -clients 64 -requests 1000000 -duration 60s -disconnect 0.25 -hostile-every 1s
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8000/v1", "the server's OpenAI base URL")
	model := flag.String("model", "", "the model name requests send (default: the first GET /models lists)")
	clients := flag.Int("clients", 8, "concurrent clients (streams)")
	requests := flag.Int("requests", 32, "requests in all")
	maxTokens := flag.Int("max-tokens", 64, "tokens generated per request (ignore_eos)")
	promptWords := flag.Int("prompt-words", 24, "words of each prompt (each request's differs)")
	duration := flag.Duration("duration", 60*time.Second, "stop sending after this long")
	pid := flag.Int("pid", 0, "the server's process id, to report its resident memory")
	jsonOut := flag.Bool("json", false, "print one JSON line")
	disconnect := flag.Float64("disconnect", 0, "fraction of streams (0 to 1) dropped by the client after a random number of tokens")
	hostileEvery := flag.Duration("hostile-every", 0, "send one hostile constrained request this often (0: none)")
	seed := flag.Uint64("seed", 1, "seed of the disconnect choices")
	flag.Parse()
	if *clients <= 0 || *requests <= 0 || *maxTokens <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -clients, -requests and -max-tokens must be positive")
		os.Exit(2)
	}
	if *disconnect < 0 || *disconnect > 1 || *hostileEvery < 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -disconnect must be in [0, 1] and -hostile-every not negative")
		os.Exit(2)
	}

	if *model == "" {
		m, err := firstModel(*url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		*model = m
	}
	rssBefore := rss(*pid)
	// sending ends after -duration; the requests in flight then have a minute to finish.
	sending, stopSending := context.WithTimeout(context.Background(), *duration)
	defer stopSending()
	inFlight, cancel := context.WithTimeout(context.Background(), *duration+time.Minute)
	defer cancel()
	rssMax := newRSSWatch(*pid)
	var (
		mu      sync.Mutex
		results []result
		next    int
		rng     = rand.New(rand.NewPCG(*seed, 0))
	)
	// take returns the next request's index and after how many tokens its client drops it
	// (0: never); -1 once all are sent.
	take := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		if next >= *requests || sending.Err() != nil {
			return -1, 0
		}
		next++
		drop := 0
		if rng.Float64() < *disconnect {
			drop = 1 + rng.IntN(*maxTokens)
		}
		return next - 1, drop
	}
	start := time.Now()
	var hostile hostileStats
	var wg sync.WaitGroup
	if *hostileEvery > 0 {
		cases := hostileCases(*model, *maxTokens)
		wg.Go(func() {
			tick := time.NewTicker(*hostileEvery)
			defer tick.Stop()
			var sent sync.WaitGroup
			for k := 0; ; k++ {
				select {
				case <-sending.Done():
					sent.Wait()
					return
				case <-tick.C:
				}
				c := cases[k%len(cases)]
				sent.Go(func() { hostile.send(inFlight, *url, c) })
			}
		})
	}
	for range *clients {
		wg.Go(func() {
			for i, drop := take(); i >= 0; i, drop = take() {
				r := stream(inFlight, *url, *model, prompt(i, *promptWords), *maxTokens, drop)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	rssAfter := rss(*pid)

	var tokens, failed, fiveXX, dropped int
	var ttft, itl []float64
	var errs []string
	for _, r := range results {
		tokens += r.tokens
		if r.dropped {
			dropped++
			if r.tokens > 0 {
				ttft = append(ttft, r.ttft.Seconds()*1000)
			}
			continue
		}
		if r.err != "" {
			failed++
			if r.status >= 500 {
				fiveXX++
			}
			if len(errs) < 5 {
				errs = append(errs, r.err)
			}
			continue
		}
		ttft = append(ttft, r.ttft.Seconds()*1000)
		itl = append(itl, r.itl...)
	}
	out := map[string]any{
		"clients": *clients, "requests": len(results), "failed": failed, "status_5xx": fiveXX,
		"wall_s": round(wall.Seconds()), "tokens": tokens, "tokens_per_s": round(float64(tokens) / wall.Seconds()),
		"ttft_ms_p50": round(pct(ttft, 50)), "ttft_ms_p99": round(pct(ttft, 99)),
		"itl_ms_p50": round(pct(itl, 50)), "itl_ms_p99": round(pct(itl, 99)),
	}
	if *pid > 0 {
		out["rss_before_mib"], out["rss_max_mib"], out["rss_after_mib"] = rssBefore>>20, rssMax()>>20, rssAfter>>20
	}
	if *disconnect > 0 {
		out["disconnected"] = dropped
	}
	if *hostileEvery > 0 {
		hostile.report(out)
		fiveXX += hostile.serverEr
		failed += hostile.serverEr + hostile.transport
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	if *jsonOut {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	} else {
		keys := make([]string, 0, len(out))
		for k := range out {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Printf("%-16s %v\n", k, out[k])
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// requestSeq numbers the requests, for their Idempotency-Key.
var requestSeq atomic.Int64

// result is one request's outcome.
type result struct {
	tokens  int
	ttft    time.Duration
	itl     []float64 // ms between consecutive content events
	status  int
	err     string
	dropped bool // the client went away on purpose (-disconnect)
}

// stream sends one streamed completion and times its events. A token is counted per content
// event (servers send one per token; usage, where sent, corrects the count). With drop > 0 the
// client closes the connection after drop content events.
func stream(ctx context.Context, url, model, prompt string, maxTokens, drop int) result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens,
		"temperature": 0, "ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/completions", bytes.NewReader(body))
	if err != nil {
		return result{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	// With an Idempotency-Key, Go's client resends a POST whose kept-alive connection the
	// server had already closed (nothing sent, no answer), as it does for a GET; without it,
	// llama-server's closing of idle connections showed up as failed requests ("EOF").
	req.Header.Set("Idempotency-Key", fmt.Sprintf("loadgen-%d", requestSeq.Add(1)))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err.Error()}
	}
	defer resp.Body.Close()
	r := result{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		r.err = fmt.Sprintf("status %d: %.200s", resp.StatusCode, b.String())
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	var last time.Time
	usage := -1
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			r.err = "bad event: " + err.Error()
			return r
		}
		if ev.Error != nil {
			r.err = fmt.Sprintf("error event: %v", ev.Error)
			return r
		}
		if ev.Usage != nil {
			usage = ev.Usage.CompletionTokens
		}
		if len(ev.Choices) == 0 || ev.Choices[0].Text == "" {
			continue
		}
		now := time.Now()
		if r.tokens == 0 {
			r.ttft = now.Sub(start)
		} else {
			r.itl = append(r.itl, float64(now.Sub(last).Microseconds())/1000)
		}
		last = now
		r.tokens++
		if r.tokens == drop {
			r.dropped = true
			return r // the deferred cancel closes the connection mid-stream
		}
	}
	if err := sc.Err(); err != nil {
		r.err = err.Error()
	}
	if usage >= 0 {
		r.tokens = usage
	}
	return r
}

// firstModel asks the server which model it serves.
func firstModel(url string) (string, error) {
	resp, err := http.Get(strings.TrimSuffix(url, "/") + "/models")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("GET %s/models: no model listed (%v); give -model", url, err)
	}
	return list.Data[0].ID, nil
}

// prompt returns request i's prompt: words of a fixed text rotated by i, so prompts differ and
// no server can answer one from another's cache.
func prompt(i, words int) string {
	base := strings.Fields("the quick brown fox jumps over the lazy dog while a small bird sings in the tall green tree near the old stone bridge by the river at dawn")
	w := make([]string, words)
	for k := range w {
		w[k] = base[(i*7+k)%len(base)]
	}
	return strconv.Itoa(i) + ": " + strings.Join(w, " ")
}

// pct returns the p-th percentile of v (nearest rank), 0 for none.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	k := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// newRSSWatch samples a process's resident set size every 100 ms until the program ends and
// returns a function that reports the largest seen so far (0 without a pid).
func newRSSWatch(pid int) func() int64 {
	var most atomic.Int64
	if pid > 0 {
		go func() {
			for {
				if v := rss(pid); v > most.Load() {
					most.Store(v)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	return most.Load
}

// rss returns a process's resident set size in bytes (Linux), 0 when unknown.
func rss(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func round(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
