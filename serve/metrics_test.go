package serve

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape fetches /metrics and returns its samples by "name{labels}" (labels as written).
func scrape(t *testing.T, ts *testServer) map[string]float64 {
	t.Helper()
	resp, data := ts.do(t, http.MethodGet, "/metrics", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	out := map[string]float64{}
	typed := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			f := strings.Fields(line)
			typed[f[2]] = f[3]
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		key := line[:i]
		if _, dup := out[key]; dup {
			t.Fatalf("sample %q twice", key)
		}
		name := key
		if j := strings.IndexByte(key, '{'); j >= 0 {
			name = key[:j]
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if typed[name] == "" && typed[base] != "histogram" {
			t.Fatalf("sample %q has no # TYPE line before it", line)
		}
		out[key] = v
	}
	return out
}

// TestMetrics: /metrics counts requests by endpoint and status, tokens in and out, time to
// first token and between tokens, request durations; gauges of the queue, the running
// generations and the KV caches. It needs no API key (as vLLM's), unlike the API.
func TestMetrics(t *testing.T) {
	const key = "sk-metrics"
	ts := startServer(t, Config{APIKey: key, Parallel: 2})
	auth := []string{"Authorization", "Bearer " + key}
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": 5, "ignore_eos": true,
		"messages": []map[string]any{{"role": "user", "content": "Hi"}}}, auth...)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	resp, _ = ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hi", "max_tokens": 3, "ignore_eos": true, "stream": true}, auth...)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	ts.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "Hi", "temperature": 9}, auth...)
	ts.do(t, http.MethodGet, "/v1/models", nil) // 401: no key
	m := scrape(t, ts)

	st := ts.Stats()
	for k, want := range map[string]float64{
		`anepack_requests_total{endpoint="/v1/chat/completions",status="200"}`: 1,
		`anepack_requests_total{endpoint="/v1/completions",status="200"}`:      1,
		`anepack_requests_total{endpoint="/v1/completions",status="400"}`:      1,
		`anepack_requests_total{endpoint="/v1/models",status="401"}`:           1,
		`anepack_prompt_tokens_total`:                                          float64(st.PromptTokens),
		`anepack_completion_tokens_total`:                                      8,
		`anepack_generations_total{outcome="finished"}`:                        2,
		`anepack_time_to_first_token_seconds_count`:                            2,
		`anepack_inter_token_latency_seconds_count`:                            (5 - 1) + (3 - 1),
		`anepack_request_duration_seconds_count{endpoint="/v1/completions"}`:   2,
		`anepack_queue_depth`:                                                  0,
		`anepack_active_sequences`:                                             0,
		`anepack_sessions`:                                                     2,
		`anepack_kv_cache_bytes`:                                               float64(2 * 2 * testContext * testModel.Config.NumHiddenLayers * testModel.Config.KVDim() * 4),
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v); want %v", k, got, ok, want)
		}
	}
	if st.PromptTokens == 0 {
		t.Error("no prompt tokens counted")
	}
	// Histograms: cumulative buckets ending in +Inf = _count, and a positive _sum.
	for _, h := range []struct {
		name   string
		bounds []float64
	}{{"anepack_time_to_first_token_seconds", ttftBuckets}, {"anepack_inter_token_latency_seconds", interTokenBuckets}} {
		prev := 0.0
		for _, b := range append(append([]float64(nil), h.bounds...), math.Inf(1)) {
			le := formatFloat(b)
			if math.IsInf(b, 1) {
				le = "+Inf"
			}
			v, ok := m[fmt.Sprintf(`%s_bucket{le="%s"}`, h.name, le)]
			if !ok || v < prev {
				t.Fatalf("%s bucket le=%s: %v (present %v) after %v", h.name, le, v, ok, prev)
			}
			prev = v
		}
		if prev != m[h.name+"_count"] || m[h.name+"_sum"] <= 0 {
			t.Errorf("%s: +Inf bucket %v, _count %v, _sum %v", h.name, prev, m[h.name+"_count"], m[h.name+"_sum"])
		}
	}
}
