package runtime_test

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/tokenizer"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testmodel.Cleanup()
	os.Exit(code)
}

// setup opens the f16 tiny golden model on a 2-thread CPU backend and returns its first case
// with only wide top-1 gaps (greedy decoding is then unambiguous).
func setup(t *testing.T) (*runtime.Model, runtime.Backend, testmodel.Case) {
	t.Helper()
	const name = "qwen2-tiny-untied"
	g := testmodel.LoadGolden(t, name)
	m, err := runtime.Open(testmodel.Bundle(t, name, "f16"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		m.Close()
	})
	for _, c := range g.Cases {
		if wide(c) && len(c.PromptIDs) > 4 {
			return m, b, c
		}
	}
	t.Fatal("no golden case with wide gaps and a prompt of more than 4 tokens")
	return nil, nil, testmodel.Case{}
}

func wide(c testmodel.Case) bool {
	for _, s := range c.StepsTop8 {
		if s[0][1]-s[1][1] <= 2e-3 {
			return false
		}
	}
	return true
}

func newSession(t *testing.T, m *runtime.Model, b runtime.Backend, ctx int) *runtime.Session {
	t.Helper()
	s, err := runtime.NewSession(m, b, ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// greedyNoEOS generates greedily without stopping at eos ids.
func greedyNoEOS(max int) runtime.GenerateOptions {
	return runtime.GenerateOptions{MaxTokens: max, EOS: []int{}, Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}}
}

func TestGenerateGreedyMatchesHF(t *testing.T) {
	m, b, c := setup(t)
	s := newSession(t, m, b, 0)
	var streamed strings.Builder
	opts := greedyNoEOS(len(c.GeneratedIDs))
	opts.OnText = func(text string) error { streamed.WriteString(text); return nil }
	res, err := s.Generate(context.Background(), c.PromptIDs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, c.GeneratedIDs) {
		t.Fatalf("generated %v\nHF greedy %v", res.Tokens, c.GeneratedIDs)
	}
	if res.Reason != runtime.StopLength {
		t.Errorf("reason %q, want %q", res.Reason, runtime.StopLength)
	}
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	want := tok.DecodeWith(c.GeneratedIDs, tokenizer.DecodeOptions{SkipSpecialTokens: true})
	if res.Text != want || streamed.String() != want {
		t.Errorf("text %q, streamed %q; want %q", res.Text, streamed.String(), want)
	}
	// The last sampled token is not run, so the cache holds the prompt and all but one.
	if got, want := len(s.Tokens()), len(c.PromptIDs)+len(c.GeneratedIDs)-1; got != want {
		t.Errorf("session caches %d tokens; want %d", got, want)
	}
	if res.DecodeSteps != len(c.GeneratedIDs)-1 || res.TTFT <= 0 || res.Prefill <= 0 {
		t.Errorf("stats: %d decode steps, TTFT %v, prefill %v", res.DecodeSteps, res.TTFT, res.Prefill)
	}
}

func TestGenerateStops(t *testing.T) {
	m, b, c := setup(t)
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	full := tok.DecodeWith(c.GeneratedIDs, tokenizer.DecodeOptions{SkipSpecialTokens: true})

	t.Run("eos", func(t *testing.T) {
		s := newSession(t, m, b, 0)
		opts := greedyNoEOS(0)
		opts.EOS = []int{c.GeneratedIDs[5]}
		res, err := s.Generate(context.Background(), c.PromptIDs, opts)
		if err != nil {
			t.Fatal(err)
		}
		first := slices.Index(c.GeneratedIDs, c.GeneratedIDs[5])
		if res.Reason != runtime.StopEOS || !slices.Equal(res.Tokens, c.GeneratedIDs[:first]) {
			t.Errorf("reason %q, tokens %v; want eos after %v", res.Reason, res.Tokens, c.GeneratedIDs[:first])
		}
	})

	t.Run("string", func(t *testing.T) {
		// A stop string from the middle of the greedy text: the output is what precedes it.
		runes := []rune(full)
		if len(runes) < 12 {
			t.Fatalf("greedy text %q too short", full)
		}
		stop := string(runes[len(runes)/2 : len(runes)/2+3])
		s := newSession(t, m, b, 0)
		opts := greedyNoEOS(len(c.GeneratedIDs))
		opts.Stop = []string{stop}
		var streamed strings.Builder
		opts.OnText = func(text string) error { streamed.WriteString(text); return nil }
		res, err := s.Generate(context.Background(), c.PromptIDs, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := full[:strings.Index(full, stop)]
		if res.Reason != runtime.StopString || res.Text != want || streamed.String() != want {
			t.Errorf("stop %q: reason %q, text %q, streamed %q; want %q", stop, res.Reason, res.Text, streamed.String(), want)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		s := newSession(t, m, b, 0)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := greedyNoEOS(0)
		n := 0
		opts.OnText = func(string) error {
			if n++; n == 3 {
				cancel()
			}
			return nil
		}
		res, err := s.Generate(ctx, c.PromptIDs, opts)
		if !errors.Is(err, context.Canceled) || res.Reason != runtime.StopCancelled {
			t.Fatalf("err %v, reason %q; want context.Canceled and %q", err, res.Reason, runtime.StopCancelled)
		}
		if len(res.Tokens) < 3 || len(res.Tokens) > 4 || !slices.Equal(res.Tokens, c.GeneratedIDs[:len(res.Tokens)]) {
			t.Errorf("cancelled after %d tokens %v; want the first 3 or 4 of %v", len(res.Tokens), res.Tokens, c.GeneratedIDs)
		}
	})

	t.Run("context", func(t *testing.T) {
		ctxLen := len(c.PromptIDs) + 4
		s := newSession(t, m, b, ctxLen)
		res, err := s.Generate(context.Background(), c.PromptIDs, greedyNoEOS(0))
		if err != nil {
			t.Fatal(err)
		}
		// Positions prompt..ctx-1 take 4 more tokens, and the token sampled after the last one
		// is still returned: 5 in all.
		if res.Reason != runtime.StopContext || !slices.Equal(res.Tokens, c.GeneratedIDs[:5]) {
			t.Errorf("reason %q, tokens %v; want %q after %v", res.Reason, res.Tokens, runtime.StopContext, c.GeneratedIDs[:5])
		}
	})
}

// TestPrefixReuse checks that a chat-like second prompt reuses the cached tokens and gives the
// same logits as a fresh session that computes everything.
func TestPrefixReuse(t *testing.T) {
	m, b, c := setup(t)
	s := newSession(t, m, b, 0)
	ctx := context.Background()
	res, err := s.Generate(ctx, c.PromptIDs, greedyNoEOS(6))
	if err != nil {
		t.Fatal(err)
	}
	second := slices.Concat(c.PromptIDs, res.Tokens, []int{9707, 11, 1879})
	reused, err := s.Prefill(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(c.PromptIDs) + len(res.Tokens) - 1; reused != want {
		t.Errorf("reused %d tokens; want %d", reused, want)
	}
	fresh := newSession(t, m, b, 0)
	if _, err := fresh.Prefill(ctx, second); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(s.Logits(), fresh.Logits()); d > 1e-4 {
		t.Errorf("logits after reuse differ from a fresh prefill by %g", d)
	}
	// Going back: a prompt that is a strict prefix of the cache recomputes its last token.
	short := second[:len(c.PromptIDs)]
	if reused, err = s.Prefill(ctx, short); err != nil || reused != len(short)-1 {
		t.Errorf("prefill of a cached prefix: reused %d, err %v; want %d", reused, err, len(short)-1)
	}
	fresh.Reset()
	if _, err := fresh.Prefill(ctx, short); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(s.Logits(), fresh.Logits()); d > 1e-4 {
		t.Errorf("logits after moving back differ from a fresh prefill by %g", d)
	}
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func TestSessionErrors(t *testing.T) {
	m, b, c := setup(t)
	maxCtx := m.Config.MaxPositionEmbeddings
	if _, err := runtime.NewSession(m, b, maxCtx+1); err == nil || !strings.Contains(err.Error(), "max_position_embeddings") {
		t.Errorf("context past the model's maximum: err %v", err)
	}
	s := newSession(t, m, b, 8)
	ctx := context.Background()
	if _, err := s.Prefill(ctx, nil); !errors.Is(err, runtime.ErrEmptyPrompt) {
		t.Errorf("empty prompt: err %v", err)
	}
	long := c.PromptIDs
	if len(long) <= 8 {
		long = slices.Concat(long, long, long)
	}
	var ce *runtime.ContextError
	if _, err := s.Prefill(ctx, long); !errors.As(err, &ce) || ce.Tokens != len(long) || ce.Context != 8 {
		t.Errorf("prompt of %d tokens in a context of 8: err %v", len(long), err)
	}
	if _, err := s.Prefill(ctx, []int{1, m.Config.VocabSize}); err == nil {
		t.Error("a token id past the vocabulary was accepted")
	}
	if _, err := s.Prefill(ctx, long[:8]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(1); !errors.As(err, &ce) {
		t.Errorf("append to a full context: err %v", err)
	}
	if _, err := s.Generate(ctx, nil, greedyNoEOS(1)); !errors.Is(err, runtime.ErrEmptyPrompt) {
		t.Errorf("Generate with an empty prompt: err %v", err)
	}
}

// TestDecodeAllocatesNothing checks that a decode step — sampling the next token and running it
// through the model — does not allocate, with the model's greedy and a sampling configuration.
func TestDecodeAllocatesNothing(t *testing.T) {
	m, b, c := setup(t)
	s := newSession(t, m, b, 512)
	if _, err := s.Prefill(context.Background(), c.PromptIDs); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []runtime.Sampling{{}, {Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05, Seed: 1}} {
		sampler, err := runtime.NewSampler(cfg, m.Config.VocabSize)
		if err != nil {
			t.Fatal(err)
		}
		step := func() {
			id := sampler.Sample(s.Logits(), s.Tokens())
			if err := s.Append(id); err != nil {
				t.Fatal(err)
			}
		}
		step() // warm up
		if a := testing.AllocsPerRun(20, step); a != 0 {
			t.Errorf("%+v: a decode step allocates %.1f times", cfg, a)
		}
	}
}
