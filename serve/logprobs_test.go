package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/anepack/anepack/runtime"
)

func TestLogprobsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	logits[17], logits[4000] = 9, 9 // a tie: the lower id comes first
	var m float64 = math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	ref := func(id int) float64 { return float64(logits[id]) - m - math.Log(sum) }
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	for _, top := range []int{0, 1, 5, 20} {
		lp := logprobsOf(logits, 123, top)
		if lp.id != 123 || math.Abs(float64(lp.logprob)-ref(123)) > 1e-4 || len(lp.top) != top {
			t.Fatalf("top %d: %+v; want logprob %v", top, lp, ref(123))
		}
		for k, e := range lp.top {
			if e.id != order[k] || math.Abs(float64(e.logprob)-ref(e.id)) > 1e-4 {
				t.Fatalf("top %d, rank %d: %+v; want id %d logprob %v", top, k, e, order[k], ref(order[k]))
			}
		}
	}
}

// refSteps runs the model greedily over prompt for n tokens and returns, per step, the logits'
// log-softmax (float64) and the greedy token.
func refSteps(t *testing.T, prompt []int, n int) (logp [][]float64, ids []int) {
	t.Helper()
	sess, err := runtime.NewSession(testModel, testBackend, testContext)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Prefill(context.Background(), prompt); err != nil {
		t.Fatal(err)
	}
	for range n {
		l := sess.Logits()
		m := math.Inf(-1)
		for _, v := range l {
			m = max(m, float64(v))
		}
		var sum float64
		for _, v := range l {
			sum += math.Exp(float64(v) - m)
		}
		row := make([]float64, len(l))
		best := 0
		for i, v := range l {
			row[i] = float64(v) - m - math.Log(sum)
			if v > l[best] {
				best = i
			}
		}
		logp, ids = append(logp, row), append(ids, best)
		if err := sess.Append(best); err != nil {
			t.Fatal(err)
		}
	}
	return logp, ids
}

// TestChatLogprobs: greedy chat with logprobs and top_logprobs 3, plain and streamed: each
// token's log-probability is the model's raw log-softmax at that step (computed here from the
// runtime's logits), its top alternatives are the three most likely in order, and its bytes
// are the token's.
func TestChatLogprobs(t *testing.T) {
	ts := startServer(t, Config{})
	const n = 6
	prompt := chatPrompt(t, ts, "Count to three.")
	logp, ids := refSteps(t, prompt, n)
	body := map[string]any{"model": ts.ModelID(), "max_tokens": n, "temperature": 0, "ignore_eos": true, "logprobs": true, "top_logprobs": 3,
		"messages": []map[string]any{{"role": "user", "content": "Count to three."}}}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", body, &got)
	lp := got.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != n {
		t.Fatalf("logprobs %+v; want %d entries", lp, n)
	}
	check := func(where string, entries []logprobEntry) {
		for i, e := range entries {
			want := ids[i]
			if !bytes.Equal(intsToBytes(e.Bytes), ts.tok.TokenBytes(want)) || math.Abs(e.Logprob-logp[i][want]) > 2e-4 {
				t.Fatalf("%s: token %d: %+v; want id %d (%q) logprob %v", where, i, e, want, ts.tok.TokenBytes(want), logp[i][want])
			}
			if len(e.TopLogprobs) != 3 || math.Abs(e.TopLogprobs[0].Logprob-e.Logprob) > 1e-6 {
				t.Fatalf("%s: token %d: top %+v; greedy decoding picked the first", where, i, e.TopLogprobs)
			}
			for k := 1; k < 3; k++ {
				if e.TopLogprobs[k].Logprob > e.TopLogprobs[k-1].Logprob {
					t.Fatalf("%s: token %d: top_logprobs out of order: %+v", where, i, e.TopLogprobs)
				}
			}
		}
	}
	check("plain", lp.Content)

	body["stream"] = true
	var streamed []logprobEntry
	for _, ev := range ts.stream(t, "/v1/chat/completions", body) {
		var c chatChunk
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &c) != nil || len(c.Choices) == 0 {
			continue
		}
		if l := c.Choices[0].Logprobs; l != nil {
			streamed = append(streamed, l.Content...)
		}
	}
	if len(streamed) != n {
		t.Fatalf("streamed %d logprob entries; want %d", len(streamed), n)
	}
	check("streamed", streamed)

	// logprobs without top_logprobs: an empty list of alternatives; and none asked: null.
	delete(body, "stream")
	delete(body, "top_logprobs")
	ts.post(t, "/v1/chat/completions", body, &got)
	if e := got.Choices[0].Logprobs.Content[0]; e.TopLogprobs == nil || len(e.TopLogprobs) != 0 {
		t.Fatalf("top_logprobs absent: %+v; want []", e)
	}
	delete(body, "logprobs")
	resp, data := ts.do(t, "POST", "/v1/chat/completions", body)
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte(`"logprobs":null`)) {
		t.Fatalf("no logprobs asked: %s", data)
	}
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// TestCompletionLogprobs: the legacy shape on /v1/completions, plain and streamed: tokens,
// token_logprobs (the raw log-softmax), top_logprobs holding the two most likely and the
// sampled token, and text_offset counting the characters before each token.
func TestCompletionLogprobs(t *testing.T) {
	ts := startServer(t, Config{})
	const n = 5
	prompt := ts.tok.Encode("Once upon a time")
	logp, ids := refSteps(t, prompt, n)
	body := map[string]any{"model": ts.ModelID(), "prompt": prompt, "max_tokens": n, "temperature": 0, "ignore_eos": true, "logprobs": 2}
	type legacy struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	var plain struct {
		Choices []struct {
			Text     string  `json:"text"`
			Logprobs *legacy `json:"logprobs"`
		} `json:"choices"`
	}
	ts.post(t, "/v1/completions", body, &plain)
	l := plain.Choices[0].Logprobs
	if l == nil || len(l.Tokens) != n || len(l.TokenLogprobs) != n || len(l.TopLogprobs) != n || len(l.TextOffset) != n {
		t.Fatalf("logprobs %+v", l)
	}
	offset := 0
	for i := range n {
		text, _ := tokenText(ts.tok, ids[i])
		if l.Tokens[i] != text || math.Abs(l.TokenLogprobs[i]-logp[i][ids[i]]) > 2e-4 || l.TextOffset[i] != offset {
			t.Fatalf("token %d: %q %v at %d; want %q %v at %d", i, l.Tokens[i], l.TokenLogprobs[i], l.TextOffset[i], text, logp[i][ids[i]], offset)
		}
		offset += len([]rune(text))
		if v, ok := l.TopLogprobs[i][text]; !ok || math.Abs(v-l.TokenLogprobs[i]) > 1e-6 || len(l.TopLogprobs[i]) > 3 || len(l.TopLogprobs[i]) < 2 {
			t.Fatalf("token %d: top_logprobs %v; want the two most likely, the sampled %q among them", i, l.TopLogprobs[i], text)
		}
	}

	body["stream"] = true
	var streamed legacy
	for _, ev := range ts.stream(t, "/v1/completions", body) {
		var c struct {
			Choices []struct {
				Logprobs *legacy `json:"logprobs"`
			} `json:"choices"`
		}
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &c) != nil || len(c.Choices) == 0 || c.Choices[0].Logprobs == nil {
			continue
		}
		s := c.Choices[0].Logprobs
		streamed.Tokens = append(streamed.Tokens, s.Tokens...)
		streamed.TokenLogprobs = append(streamed.TokenLogprobs, s.TokenLogprobs...)
		streamed.TextOffset = append(streamed.TextOffset, s.TextOffset...)
	}
	if !slices.Equal(streamed.Tokens, l.Tokens) || !slices.Equal(streamed.TextOffset, l.TextOffset) || len(streamed.TokenLogprobs) != n {
		t.Fatalf("streamed %+v; plain %+v", streamed, l)
	}
}
