// Command loadgen measures an OpenAI-compatible server under concurrent streaming load: anerun
// serve, llama-server, vLLM. Each of -clients clients sends -requests/-clients streamed
// completions one after the other (greedy, ignore_eos, exactly -max-tokens each) and the
// generator reports the total generated tokens per second over the run's wall time, time to
// first token (p50, p99), inter-token time (p50, p99), what failed and, with -pid, the server's
// resident memory before and after. It runs for at most -duration and reports what finished.
//
//	go run ./bench/loadgen -url http://127.0.0.1:8000/v1 -model M -clients 8 -requests 32
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
	flag.Parse()
	if *clients <= 0 || *requests <= 0 || *maxTokens <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: -clients, -requests and -max-tokens must be positive")
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
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var (
		mu      sync.Mutex
		results []result
		next    int
	)
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if next >= *requests || ctx.Err() != nil {
			return -1
		}
		next++
		return next - 1
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := take(); i >= 0; i = take() {
				r := stream(ctx, *url, *model, prompt(i, *promptWords), *maxTokens)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	rssAfter := rss(*pid)

	var tokens, failed, fiveXX int
	var ttft, itl []float64
	var errs []string
	for _, r := range results {
		tokens += r.tokens
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
		out["rss_before_mib"], out["rss_after_mib"] = rssBefore>>20, rssAfter>>20
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
	tokens int
	ttft   time.Duration
	itl    []float64 // ms between consecutive content events
	status int
	err    string
}

// stream sends one streamed completion and times its events. A token is counted per content
// event (servers send one per token; usage, where sent, corrects the count).
func stream(ctx context.Context, url, model, prompt string, maxTokens int) result {
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
