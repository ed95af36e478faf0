package runtime

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/anepack/anepack/format"
)

// The reference implementations below transcribe Hugging Face's logits processors
// (transformers/generation/logits_process.py) literally — full sorts, cumulative sums, -Inf for
// removed tokens — so the sampler's faster versions can be checked against them on random inputs.

func refSoftmax(scores []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range scores {
		m = max(m, v)
	}
	p := make([]float64, len(scores))
	sum := 0.0
	for i, v := range scores {
		p[i] = math.Exp(v - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// refTopK: indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None].
func refTopK(scores []float64, k int) []float64 {
	s := slices.Clone(scores)
	sorted := slices.Clone(scores)
	sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
	kth := sorted[min(k, len(s))-1]
	for i := range s {
		if s[i] < kth {
			s[i] = math.Inf(-1)
		}
	}
	return s
}

// refTopP: sorted ascending, cumulative probs; remove where cumprobs <= 1 - top_p, keep the last.
func refTopP(scores []float64, p float64) []float64 {
	s := slices.Clone(scores)
	idx := make([]int, len(s))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] < s[idx[b]] })
	sortedScores := make([]float64, len(s))
	for i, j := range idx {
		sortedScores[i] = s[j]
	}
	probs := refSoftmax(sortedScores)
	cum := 0.0
	for i, j := range idx {
		cum += probs[i]
		if cum <= 1-p && i < len(idx)-1 {
			s[j] = math.Inf(-1)
		}
	}
	return s
}

// refMinP: remove tokens whose probability is below min_p * the top probability.
func refMinP(scores []float64, p float64) []float64 {
	s := slices.Clone(scores)
	probs := refSoftmax(s)
	top := slices.Max(probs)
	for i := range s {
		if probs[i] < p*top {
			s[i] = math.Inf(-1)
		}
	}
	return s
}

func survivors(scores []float64) []int {
	var ids []int
	for i, v := range scores {
		if !math.IsInf(v, -1) {
			ids = append(ids, i)
		}
	}
	return ids
}

// candidates runs one of the sampler's filters on float32 logits and returns the surviving ids.
func candidates(t *testing.T, logits []float32, cfg Sampling, filter func(s *Sampler, cand []int32) []int32) []int {
	t.Helper()
	s, err := NewSampler(cfg, len(logits))
	if err != nil {
		t.Fatal(err)
	}
	copy(s.scores, logits)
	cand := s.cand[:0]
	for i := range logits {
		cand = append(cand, int32(i))
	}
	var ids []int
	for _, id := range filter(s, cand) {
		ids = append(ids, int(id))
	}
	slices.Sort(ids)
	return ids
}

func randomLogits(r *rand.Rand, n int, spread float64) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * spread)
	}
	return l
}

func widen(l []float32) []float64 {
	d := make([]float64, len(l))
	for i, v := range l {
		d[i] = float64(v)
	}
	return d
}

func TestFiltersMatchHFReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(300)
		logits := randomLogits(r, n, []float64{0.1, 1, 4}[trial%3])
		if trial%5 == 0 { // ties, as in quantized or synthetic models
			for i := range logits {
				logits[i] = float32(math.Round(float64(logits[i])))
			}
		}
		k := 1 + r.IntN(n+3)
		p := []float64{0.05, 0.5, 0.9, 0.95, 0.999}[trial%5]
		minp := []float64{0.01, 0.1, 0.5, 1}[trial%4]

		got := candidates(t, logits, Sampling{Temperature: 1, TopK: k}, func(s *Sampler, c []int32) []int32 {
			if k >= len(c) {
				return c
			}
			return s.topK(c, k)
		})
		if want := survivors(refTopK(widen(logits), k)); !slices.Equal(got, want) {
			t.Fatalf("trial %d: top-k %d of %v:\n got %v\nwant %v", trial, k, logits, got, want)
		}
		got = candidates(t, logits, Sampling{Temperature: 1, TopP: p}, func(s *Sampler, c []int32) []int32 { return s.topP(c, p) })
		if want := survivors(refTopP(widen(logits), p)); !slices.Equal(got, want) && !tieAtBoundary(logits, got, want) {
			t.Fatalf("trial %d: top-p %v of %v:\n got %v\nwant %v", trial, p, logits, got, want)
		}
		got = candidates(t, logits, Sampling{Temperature: 1, MinP: minp}, func(s *Sampler, c []int32) []int32 { return s.minP(c, minp) })
		if want := survivors(refMinP(widen(logits), minp)); !slices.Equal(got, want) {
			t.Fatalf("trial %d: min-p %v of %v:\n got %v\nwant %v", trial, minp, logits, got, want)
		}
	}
}

// tieAtBoundary accepts a top-p difference that is only about which of several equal logits at
// the cut survives: HF's sort order among ties is unspecified, so either answer is right. The
// two sets must have the same size and differ only in ids whose logits are equal.
func tieAtBoundary(logits []float32, a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	var da, db []float32
	for _, id := range a {
		if !slices.Contains(b, id) {
			da = append(da, logits[id])
		}
	}
	for _, id := range b {
		if !slices.Contains(a, id) {
			db = append(db, logits[id])
		}
	}
	slices.Sort(da)
	slices.Sort(db)
	return slices.Equal(da, db)
}

func TestTopPExamples(t *testing.T) {
	// probabilities 0.5, 0.3, 0.15, 0.05
	logits := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.15)), float32(math.Log(0.05))}
	for _, tc := range []struct {
		p    float64
		want []int
	}{
		{0.45, []int{0}},          // cum ascending 0.05 0.2 0.5 1: remove <= 0.55
		{0.79, []int{0, 1}},       // remove <= 0.21
		{0.81, []int{0, 1, 2}},    // remove <= 0.19
		{0.96, []int{0, 1, 2, 3}}, // remove <= 0.04: nothing
		{0.01, []int{0}},          // always keep the top token
	} {
		got := candidates(t, logits, Sampling{Temperature: 1, TopP: tc.p}, func(s *Sampler, c []int32) []int32 { return s.topP(c, tc.p) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("top-p %v: got %v, want %v", tc.p, got, tc.want)
		}
	}
	minp := candidates(t, logits, Sampling{Temperature: 1, MinP: 0.2}, func(s *Sampler, c []int32) []int32 { return s.minP(c, 0.2) })
	if !slices.Equal(minp, []int{0, 1, 2}) { // threshold 0.2*0.5 = 0.1
		t.Errorf("min-p 0.2: got %v, want [0 1 2]", minp)
	}
}

func TestGreedyAndRepetitionPenalty(t *testing.T) {
	logits := []float32{1, 3, 3, -2, 2.9}
	s, err := NewSampler(Sampling{Temperature: 0, RepetitionPenalty: 1}, len(logits))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sample(logits, nil); got != 1 {
		t.Errorf("greedy picked %d; want 1 (the first of two equal maxima)", got)
	}
	// Penalty 1.5: token 1 (3 -> 2) and 2 (3 -> 2) fall below token 4 (2.9); applied once per
	// distinct id however often it occurs; negative logits are multiplied.
	s, _ = NewSampler(Sampling{Temperature: 0, RepetitionPenalty: 1.5}, len(logits))
	if got := s.Sample(logits, []int{1, 2, 2, 2, 3}); got != 4 {
		t.Errorf("greedy with repetition penalty picked %d; want 4", got)
	}
	want := []float32{1, 2, 2, -3, 2.9}
	if !slices.Equal(s.scores, want) {
		t.Errorf("penalized scores %v; want %v", s.scores, want)
	}
	if !slices.Equal(logits, []float32{1, 3, 3, -2, 2.9}) {
		t.Errorf("Sample modified its input: %v", logits)
	}
}

func TestSampleDistributionAndSeed(t *testing.T) {
	// With temperature 2 the probabilities are softmax(logits/2).
	logits := []float32{0, 2, 4, 6}
	cfg := Sampling{Temperature: 2, TopP: 1, RepetitionPenalty: 1, Seed: 42}
	s, err := NewSampler(cfg, len(logits))
	if err != nil {
		t.Fatal(err)
	}
	want := refSoftmax([]float64{0, 1, 2, 3})
	const n = 40000
	counts := make([]int, len(logits))
	var seq []int
	for i := 0; i < n; i++ {
		id := s.Sample(logits, nil)
		counts[id]++
		if i < 64 {
			seq = append(seq, id)
		}
	}
	for i, c := range counts {
		got := float64(c) / n
		sd := math.Sqrt(want[i] * (1 - want[i]) / n)
		if math.Abs(got-want[i]) > 5*sd {
			t.Errorf("token %d drawn %.4f of the time; want %.4f (±%.4f)", i, got, want[i], 5*sd)
		}
	}
	// Same seed, same draws; another seed, other draws.
	s2, _ := NewSampler(cfg, len(logits))
	cfg.Seed = 43
	s3, _ := NewSampler(cfg, len(logits))
	var seq2, seq3 []int
	for range seq {
		seq2 = append(seq2, s2.Sample(logits, nil))
		seq3 = append(seq3, s3.Sample(logits, nil))
	}
	if !slices.Equal(seq, seq2) {
		t.Errorf("seed 42 gave two different sequences:\n%v\n%v", seq, seq2)
	}
	if slices.Equal(seq, seq3) {
		t.Errorf("seeds 42 and 43 gave the same 64 draws: %v", seq)
	}
}

func TestTopKSampling(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := randomLogits(r, 1000, 0.5)
	s, err := NewSampler(Sampling{Temperature: 1, TopK: 5, TopP: 1, Seed: 7}, len(logits))
	if err != nil {
		t.Fatal(err)
	}
	allowed := survivors(refTopK(widen(logits), 5))
	seen := map[int]bool{}
	for i := 0; i < 2000; i++ {
		id := s.Sample(logits, nil)
		if !slices.Contains(allowed, id) {
			t.Fatalf("top-k 5 drew id %d, not among %v", id, allowed)
		}
		seen[id] = true
	}
	if len(seen) != 5 {
		t.Errorf("2000 draws from 5 near-uniform tokens hit only %d of them", len(seen))
	}
}

func TestSampleAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := randomLogits(r, 151936, 1)
	history := []int{1, 2, 3, 4, 5, 100, 151935}
	for _, cfg := range []Sampling{
		{},
		{Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05},
		{Temperature: 1, TopP: 0.9, MinP: 0.05},
	} {
		s, err := NewSampler(cfg, len(logits))
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(10, func() { s.Sample(logits, history) }); a != 0 {
			t.Errorf("%+v: Sample allocates %.0f times per call", cfg, a)
		}
	}
}

func TestSamplingCheck(t *testing.T) {
	for _, bad := range []Sampling{
		{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {MinP: -0.1}, {RepetitionPenalty: -1}, {Temperature: math.NaN()},
	} {
		if _, err := NewSampler(bad, 10); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestDefaultSampling(t *testing.T) {
	yes, temp, topK, topP, rep := true, 0.7, 20, 0.8, 1.05
	got := DefaultSampling(format.Generation{DoSample: &yes, Temperature: &temp, TopK: &topK, TopP: &topP, RepetitionPenalty: &rep})
	if want := (Sampling{Temperature: 0.7, TopK: 20, TopP: 0.8, RepetitionPenalty: 1.05}); got != want {
		t.Errorf("Qwen2.5-Instruct's generation config: got %+v, want %+v", got, want)
	}
	got = DefaultSampling(format.Generation{})
	if want := (Sampling{TopP: 1, RepetitionPenalty: 1}); got != want {
		t.Errorf("no generation config: got %+v, want greedy %+v", got, want)
	}
	got = DefaultSampling(format.Generation{DoSample: &yes})
	if want := (Sampling{Temperature: 1, TopK: HFDefaultTopK, TopP: 1, RepetitionPenalty: 1}); got != want {
		t.Errorf("do_sample alone: got %+v, want HF's defaults %+v", got, want)
	}
}
