package serve

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
)

// TestChoicesAndSeeds: n=3 with a seed gives choice i what the runtime samples with seed+i, in
// the plain answer and in the stream (whose chunks carry each choice's index); usage counts the
// prompt once and the tokens of every choice.
func TestChoicesAndSeeds(t *testing.T) {
	ts := startServer(t, Config{})
	ids := ts.tok.Encode("Once upon a time")
	smp := runtime.Sampling{Temperature: 1, TopK: 50, TopP: 0.9, RepetitionPenalty: 1}
	var want []string
	for i := range 3 {
		s := smp
		s.Seed = 42 + uint64(i)
		want = append(want, reference(t, ids, runtime.GenerateOptions{MaxTokens: 8, EOS: []int{}, Sampling: s}).Text)
	}
	if want[0] == want[1] && want[1] == want[2] {
		t.Fatalf("the three seeds sample the same text %q: the test would prove nothing", want[0])
	}
	body := map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 8, "temperature": 1, "top_k": 50, "top_p": 0.9,
		"seed": 42, "n": 3, "ignore_eos": true}
	var got textCompletion
	ts.post(t, "/v1/completions", body, &got)
	if len(got.Choices) != 3 {
		t.Fatalf("%d choices", len(got.Choices))
	}
	for i, c := range got.Choices {
		if c.Index != i || c.Text != want[i] || *c.FinishReason != "length" {
			t.Errorf("choice %d: %q (index %d, %s); want %q", i, c.Text, c.Index, *c.FinishReason, want[i])
		}
	}
	if u := got.Usage.Usage; u.PromptTokens != len(ids) || u.CompletionTokens != 24 || u.TotalTokens != len(ids)+24 {
		t.Errorf("usage %+v; want %d prompt and 24 completion tokens", u, len(ids))
	}
	body["stream"] = true
	texts := make([]strings.Builder, 3)
	var order []int
	for _, ev := range ts.stream(t, "/v1/completions", body) {
		var c textCompletion
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &c) != nil {
			continue
		}
		for _, ch := range c.Choices {
			texts[ch.Index].WriteString(ch.Text)
			if len(order) == 0 || order[len(order)-1] != ch.Index {
				order = append(order, ch.Index)
			}
		}
	}
	for i := range 3 {
		if texts[i].String() != want[i] {
			t.Errorf("streamed choice %d: %q; want %q", i, texts[i].String(), want[i])
		}
	}
	if !slices.Equal(order, []int{0, 1, 2}) {
		t.Errorf("choices streamed in the order %v; want 0, 1, 2 (one after the other)", order)
	}
}

// TestPresenceAndFrequencyPenalties: the server applies OpenAI's penalties as the runtime's
// sampler does, and they change greedy decoding of the synthetic model.
func TestPresenceAndFrequencyPenalties(t *testing.T) {
	ts := startServer(t, Config{})
	ids := ts.tok.Encode("The capital of France is")
	plain := reference(t, ids, runtime.GenerateOptions{MaxTokens: 16, EOS: []int{}, Sampling: runtime.Sampling{RepetitionPenalty: 1, TopP: 1}})
	want := reference(t, ids, runtime.GenerateOptions{MaxTokens: 16, EOS: []int{},
		Sampling: runtime.Sampling{RepetitionPenalty: 1, TopP: 1, PresencePenalty: 1.5, FrequencyPenalty: 2}})
	if plain.Text == want.Text {
		t.Fatalf("penalties do not change %q: the test would prove nothing", plain.Text)
	}
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": ids, "max_tokens": 16, "temperature": 0,
		"presence_penalty": 1.5, "frequency_penalty": 2, "ignore_eos": true}, &got)
	if got.Choices[0].Text != want.Text {
		t.Fatalf("penalized text %q; the runtime gives %q", got.Choices[0].Text, want.Text)
	}
}

// TestServedModelNames: with served names only they are accepted; the first is the one listed
// and reported; any other name (the bundle's own included) is 404 model_not_found.
func TestServedModelNames(t *testing.T) {
	ts := startServer(t, Config{ServedModelNames: []string{"alpha", "beta"}})
	var list modelList
	resp, data := ts.do(t, "GET", "/v1/models", nil)
	if resp.StatusCode != 200 || json.Unmarshal(data, &list) != nil || len(list.Data) != 1 || list.Data[0].ID != "alpha" {
		t.Fatalf("models: %d %s", resp.StatusCode, data)
	}
	var m modelObject
	resp, data = ts.do(t, "GET", "/v1/models/beta", nil)
	if resp.StatusCode != 200 || json.Unmarshal(data, &m) != nil || m.ID != "alpha" {
		t.Fatalf("GET /v1/models/beta: %d %s", resp.StatusCode, data)
	}
	var got textCompletion
	ts.post(t, "/v1/completions", map[string]any{"model": "beta", "prompt": "Hi", "max_tokens": 1}, &got)
	if got.Model != "alpha" {
		t.Fatalf("a request for beta reports model %q; want alpha", got.Model)
	}
	for _, name := range []string{"qwen2-tiny", "gamma"} {
		resp, data = ts.do(t, "POST", "/v1/completions", map[string]any{"model": name, "prompt": "Hi", "max_tokens": 1})
		checkError(t, resp, data, 404, "model", "model_not_found")
		resp, data = ts.do(t, "GET", "/v1/models/"+name, nil)
		checkError(t, resp, data, 404, "model", "model_not_found")
	}
	for _, cfg := range []Config{
		{ServedModelNames: []string{"a"}, ModelID: "b"},
		{ServedModelNames: []string{"a", "a"}},
		{ServedModelNames: []string{""}},
	} {
		cfg.Model, cfg.Backend, cfg.Context = testModel, testBackend, testContext
		if s, err := New(cfg); err == nil {
			s.Close()
			t.Errorf("%v: no error", cfg.ServedModelNames)
		}
	}
}
