package runtime

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPresenceAndFrequencyPenalty checks OpenAI's formula, logit[j] -= presence*(c[j] > 0) +
// frequency*c[j], where c counts the tokens the sampler returned before (the history, which
// holds the prompt, plays no part).
func TestPresenceAndFrequencyPenalty(t *testing.T) {
	logits := []float32{5, 4.5, 4, 0}
	s, err := NewSampler(Sampling{PresencePenalty: 0.4, FrequencyPenalty: 0.3, RepetitionPenalty: 1}, len(logits))
	if err != nil {
		t.Fatal(err)
	}
	// Greedy decoding, checked step by step against the formula.
	prompt := []int{3, 3, 3} // repeated prompt tokens are not penalized
	counts := make([]int, len(logits))
	var got []int
	for range 8 {
		want := 0
		best := math.Inf(-1)
		for id, l := range logits {
			v := float64(l)
			if counts[id] > 0 {
				v -= 0.4 + 0.3*float64(counts[id])
			}
			if v > best+1e-6 {
				best, want = v, id
			}
		}
		id := s.Sample(logits, prompt)
		if id != want {
			t.Fatalf("step %d (counts %v): picked %d; want %d", len(got), counts, id, want)
		}
		counts[id]++
		got = append(got, id)
	}
	if !slices.Contains(got, 2) || !slices.Contains(got, 1) {
		t.Fatalf("the penalties never moved greedy decoding off token 0: %v", got)
	}
	// A negative presence penalty favours what was generated.
	s, _ = NewSampler(Sampling{PresencePenalty: -2, RepetitionPenalty: 1}, len(logits))
	if first := s.Sample([]float32{1, 2, 0, 0}, nil); first != 1 {
		t.Fatalf("picked %d first; want 1", first)
	}
	if second := s.Sample([]float32{1, 2, 3.5, 0}, nil); second != 1 {
		t.Fatalf("with presence -2, token 1 (2+2=4) should beat token 2 (3.5); picked %d", second)
	}
}

// TestSampleMasked draws only allowed tokens, greedy or not, whatever the logits say, and falls
// back to an allowed token when every allowed logit is -Inf.
func TestSampleMasked(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const vocab = 1000
	logits := randomLogits(r, vocab, 3)
	allowed := make(Mask, (vocab+63)/64)
	var ids []int
	for _, id := range []int{7, 63, 64, 500, 999} {
		allowed[id>>6] |= 1 << (id & 63)
		ids = append(ids, id)
	}
	for _, cfg := range []Sampling{
		{RepetitionPenalty: 1},
		{Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: 3},
		{Temperature: 0.7, TopK: 2, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.3, PresencePenalty: 1, Seed: 4},
	} {
		s, err := NewSampler(cfg, vocab)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for range 500 {
			id := s.SampleMasked(logits, []int{7, 500}, allowed)
			if !slices.Contains(ids, id) {
				t.Fatalf("%+v: drew %d, outside the mask %v", cfg, id, ids)
			}
			seen[id] = true
		}
		if cfg.Temperature == 1 && len(seen) < 3 {
			t.Errorf("%+v: 500 draws hit only %v", cfg, seen)
		}
	}
	// Greedy among the allowed: the allowed token with the largest logit.
	s, _ := NewSampler(Sampling{RepetitionPenalty: 1}, vocab)
	want := ids[0]
	for _, id := range ids {
		if logits[id] > logits[want] {
			want = id
		}
	}
	if got := s.SampleMasked(logits, nil, allowed); got != want {
		t.Errorf("greedy masked: %d; want %d", got, want)
	}
	inf := slices.Clone(logits)
	for _, id := range ids {
		inf[id] = float32(math.Inf(-1))
	}
	for _, cfg := range []Sampling{{RepetitionPenalty: 1}, {Temperature: 1, TopP: 1, RepetitionPenalty: 1}} {
		s, _ := NewSampler(cfg, vocab)
		if got := s.SampleMasked(inf, nil, allowed); got != 7 {
			t.Errorf("%+v: every allowed logit -Inf: picked %d; want the first allowed, 7", cfg, got)
		}
	}
}

func TestSampleMaskedAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := randomLogits(r, 151936, 1)
	mask := make(Mask, (len(logits)+63)/64)
	for i := range mask {
		mask[i] = r.Uint64()
	}
	history := []int{1, 2, 3}
	for _, cfg := range []Sampling{
		{PresencePenalty: 0.5, FrequencyPenalty: 0.5, RepetitionPenalty: 1},
		{Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05, PresencePenalty: 1.5, FrequencyPenalty: -0.5},
	} {
		s, err := NewSampler(cfg, len(logits))
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(20, func() { s.SampleMasked(logits, history, mask) }); a != 0 {
			t.Errorf("%+v: SampleMasked allocates %.0f times per call", cfg, a)
		}
	}
}

func TestPenaltyCheck(t *testing.T) {
	for _, bad := range []Sampling{{PresencePenalty: math.NaN()}, {FrequencyPenalty: math.Inf(1)}} {
		if _, err := NewSampler(bad, 10); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
