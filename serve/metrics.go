package serve

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the server's Prometheus metrics: counters and histograms updated as requests run
// (atomically: no lock on the per-token path), gauges read when /metrics is scraped.
type metrics struct {
	mu       sync.Mutex
	requests map[[2]string]*atomic.Uint64 // (endpoint, status) -> count

	ttft       *histogram // seconds from a request's arrival to its first token
	interToken *histogram // seconds between two tokens of one choice
	duration   map[string]*histogram
}

// Buckets in seconds, close to vLLM's, so dashboards made for it read these.
var (
	ttftBuckets       = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	interTokenBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	durationBuckets   = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960}
)

// generationEndpoints are the paths whose request durations are histogrammed.
var generationEndpoints = []string{"/v1/chat/completions", "/v1/completions"}

func newMetrics() *metrics {
	m := &metrics{requests: map[[2]string]*atomic.Uint64{}, ttft: newHistogram(ttftBuckets),
		interToken: newHistogram(interTokenBuckets), duration: map[string]*histogram{}}
	for _, e := range generationEndpoints {
		m.duration[e] = newHistogram(durationBuckets)
	}
	return m
}

// endpointLabel maps a request path to a bounded set of label values.
func endpointLabel(path string) string {
	if _, ok := routes[path]; ok {
		return path
	}
	if strings.HasPrefix(path, "/v1/models/") {
		return "/v1/models/{id}"
	}
	return "other"
}

// request counts one answered request and, for the generation endpoints, its duration.
func (m *metrics) request(path string, status int, d time.Duration) {
	key := [2]string{endpointLabel(path), strconv.Itoa(status)}
	m.mu.Lock()
	c, ok := m.requests[key]
	if !ok {
		c = new(atomic.Uint64)
		m.requests[key] = c
	}
	m.mu.Unlock()
	c.Add(1)
	if h, ok := m.duration[key[0]]; ok {
		h.observe(d.Seconds())
	}
}

// histogram is a Prometheus histogram with fixed buckets.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket (not cumulative), the last for +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound >= v: v falls in "le" that bound
	h.counts[i].Add(1)
	h.count.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// write writes the histogram's _bucket, _sum and _count lines; labels are extra label pairs
// ("k=\"v\"") or "".
func (h *histogram) write(w io.Writer, name, labels string) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"%s\"} %d\n", name, labels, sep, formatFloat(b), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, cum)
	braces := ""
	if labels != "" {
		braces = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, braces, formatFloat(math.Float64frombits(h.sum.Load())))
	// _count equals the +Inf bucket: written from the same loads, so a scrape racing an
	// observation stays consistent.
	fmt.Fprintf(w, "%s_count%s %d\n", name, braces, cum)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// metricsHandler answers GET /metrics in the Prometheus text exposition format (version
// 0.0.4), written by hand: the format is simple and a client library would be the server's
// largest dependency.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request, rec *record) {
	var b strings.Builder
	m := s.metrics
	head := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	running, waiting := s.slots.counts()
	st := s.Stats()

	head("anepack_requests_total", "counter", "HTTP requests answered, by endpoint and status (499: the client went away first).")
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	for _, k := range keys {
		m.mu.Lock()
		c := m.requests[k]
		m.mu.Unlock()
		fmt.Fprintf(&b, "anepack_requests_total{endpoint=%q,status=%q} %d\n", k[0], k[1], c.Load())
	}
	head("anepack_prompt_tokens_total", "counter", "Prompt tokens of the generations run (cached ones included).")
	fmt.Fprintf(&b, "anepack_prompt_tokens_total %d\n", st.PromptTokens)
	head("anepack_completion_tokens_total", "counter", "Tokens generated (end-of-sequence tokens included, as usage counts them).")
	fmt.Fprintf(&b, "anepack_completion_tokens_total %d\n", st.CompletionTokens)
	head("anepack_generations_total", "counter", "Generation requests by how they ended.")
	for _, o := range []struct {
		name string
		v    uint64
	}{{"finished", st.Generations}, {"cancelled", st.Cancelled}, {"timed_out", st.TimedOut}, {"rejected", st.Rejected}, {"failed", st.Failed}} {
		fmt.Fprintf(&b, "anepack_generations_total{outcome=%q} %d\n", o.name, o.v)
	}
	head("anepack_time_to_first_token_seconds", "histogram", "Time from a request's arrival to its first generated token (queueing included).")
	m.ttft.write(&b, "anepack_time_to_first_token_seconds", "")
	head("anepack_inter_token_latency_seconds", "histogram", "Time between two consecutive tokens of one choice.")
	m.interToken.write(&b, "anepack_inter_token_latency_seconds", "")
	head("anepack_request_duration_seconds", "histogram", "Time from a generation request's arrival to its last byte.")
	for _, e := range generationEndpoints {
		m.duration[e].write(&b, "anepack_request_duration_seconds", fmt.Sprintf("endpoint=%q", e))
	}
	head("anepack_queue_depth", "gauge", "Requests waiting for a free session.")
	fmt.Fprintf(&b, "anepack_queue_depth %d\n", waiting)
	head("anepack_active_sequences", "gauge", "Generations running now.")
	fmt.Fprintf(&b, "anepack_active_sequences %d\n", running)
	head("anepack_batch_passes_total", "counter", "Passes of the model run by the engine (each serves every generation in progress: continuous batching).")
	fmt.Fprintf(&b, "anepack_batch_passes_total %d\n", s.engine.passes.Load())
	head("anepack_batch_sequences_total", "counter", "Sequences in those passes, summed: divided by the passes, the average batch.")
	fmt.Fprintf(&b, "anepack_batch_sequences_total %d\n", s.engine.passSeqs.Load())
	head("anepack_batch_tokens_total", "counter", "Tokens run in those passes (decode steps and prompt chunks).")
	fmt.Fprintf(&b, "anepack_batch_tokens_total %d\n", s.engine.passTokens.Load())
	head("anepack_sessions", "gauge", "Sessions (KV caches) the server holds: generations that can run at once.")
	fmt.Fprintf(&b, "anepack_sessions %d\n", len(s.slots.all))
	head("anepack_kv_cache_bytes", "gauge", "Bytes allocated for the sessions' key/value caches (a sliding-window layer's ring holds its window) and recurrent states, as the backend reports them. Pages are touched as caches fill.")
	fmt.Fprintf(&b, "anepack_kv_cache_bytes %d\n", s.stateBytes)
	size, hits, misses := s.grammars.Stats()
	head("anepack_grammar_cache_entries", "gauge", "Compiled response_format and tool-call grammars cached.")
	fmt.Fprintf(&b, "anepack_grammar_cache_entries %d\n", size)
	head("anepack_grammar_cache_lookups_total", "counter", "Lookups of compiled grammars, by result.")
	fmt.Fprintf(&b, "anepack_grammar_cache_lookups_total{result=\"hit\"} %d\n", hits)
	fmt.Fprintf(&b, "anepack_grammar_cache_lookups_total{result=\"miss\"} %d\n", misses)

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, b.String())
}
