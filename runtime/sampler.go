package runtime

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime/kernels"
)

// Sampling says how the next token is chosen. The fields mean what Hugging Face's generation
// parameters mean, and are applied in the order of its logits processors: repetition penalty,
// then (OpenAI's) presence and frequency penalties, then temperature, top-k, top-p and min-p,
// then a draw from the softmax of what is left.
type Sampling struct {
	// Temperature divides the logits; 0 means greedy decoding (the largest logit wins, the
	// first one on ties, like torch.argmax) and disables TopK, TopP and MinP. A temperature so
	// small that the division would overflow float32 (1e-40 for ordinary logits) decodes
	// greedily too.
	Temperature float64
	// TopK keeps the K largest logits (and any tied with the K-th); 0 disables it.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probabilities add up to at least
	// TopP (nucleus sampling); 1 (or 0) disables it.
	TopP float64
	// MinP drops tokens less likely than MinP times the most likely one; 0 disables it.
	MinP float64
	// RepetitionPenalty divides the positive logits and multiplies the negative ones of every
	// token already in the sequence (prompt included), once per distinct token, greedy or not;
	// 1 (or 0) disables it.
	RepetitionPenalty float64
	// PresencePenalty is subtracted once from the logit of every token the sampler has already
	// returned, and FrequencyPenalty once per time it was returned: OpenAI's presence_penalty
	// and frequency_penalty, which count generated tokens only (not the prompt), as vLLM does.
	// 0 disables them; negative values favour repetition.
	PresencePenalty, FrequencyPenalty float64
	// Seed makes sampling reproducible: the same seed, model and prompt give the same tokens.
	Seed uint64
}

// Check reports a parameter outside its range, naming it.
func (s Sampling) Check() error {
	switch {
	case math.IsNaN(s.Temperature) || s.Temperature < 0:
		return fmt.Errorf("temperature %v: expected a number >= 0", s.Temperature)
	case s.TopK < 0:
		return fmt.Errorf("top-k %d: expected an integer >= 0", s.TopK)
	case math.IsNaN(s.TopP) || s.TopP < 0 || s.TopP > 1:
		return fmt.Errorf("top-p %v: expected a number in [0, 1]", s.TopP)
	case math.IsNaN(s.MinP) || s.MinP < 0 || s.MinP > 1:
		return fmt.Errorf("min-p %v: expected a number in [0, 1]", s.MinP)
	case math.IsNaN(s.RepetitionPenalty) || s.RepetitionPenalty < 0:
		return fmt.Errorf("repeat penalty %v: expected a number > 0", s.RepetitionPenalty)
	case math.IsNaN(s.PresencePenalty) || math.IsInf(s.PresencePenalty, 0):
		return fmt.Errorf("presence penalty %v: expected a finite number", s.PresencePenalty)
	case math.IsNaN(s.FrequencyPenalty) || math.IsInf(s.FrequencyPenalty, 0):
		return fmt.Errorf("frequency penalty %v: expected a finite number", s.FrequencyPenalty)
	}
	return nil
}

// HFDefaultTopK is transformers' GenerationConfig default top_k, used when a model's
// generation_config.json asks for sampling without naming top_k.
const HFDefaultTopK = 50

// DefaultSampling returns the sampling of a model's generation config as transformers'
// generate would apply it: greedy unless do_sample is true; when sampling, temperature 1 and
// top_k 50 unless the config says otherwise. The repetition penalty applies either way. Top-p,
// min-p and (when set) top-k are kept in the greedy case too, so that asking for a temperature
// later samples the way the model's authors configured.
func DefaultSampling(g format.Generation) Sampling {
	s := Sampling{TopP: 1, RepetitionPenalty: 1}
	sample := g.DoSample != nil && *g.DoSample
	if sample {
		s.Temperature, s.TopK = 1, HFDefaultTopK
	}
	if g.Temperature != nil && sample {
		s.Temperature = *g.Temperature
	}
	if g.TopK != nil {
		s.TopK = *g.TopK
	}
	if g.TopP != nil {
		s.TopP = *g.TopP
	}
	if g.MinP != nil {
		s.MinP = *g.MinP
	}
	if g.RepetitionPenalty != nil {
		s.RepetitionPenalty = *g.RepetitionPenalty
	}
	return s
}

// Sampler chooses tokens from logits. Its buffers are allocated once for the vocabulary, so
// Sample does not allocate. One Sampler serves one generated sequence: it remembers the tokens
// it has returned, for the presence and frequency penalties. A Sampler is not safe for
// concurrent use.
type Sampler struct {
	cfg    Sampling
	rng    *rand.Rand
	scores []float32 // the logits after the processors; removed tokens are -Inf
	cand   []int32   // surviving token ids
	probs  []float64 // scratch, indexed like cand
	heap   []float32 // top-k scratch: a min-heap of the k largest scores
	seen   []uint32  // seen[id] == stamp: id already penalized in this call
	stamp  uint32
	// counts[id] is how often id was returned, and returned lists each such id once, so the
	// presence and frequency penalties cost one step per distinct generated token rather than
	// a pass over the vocabulary. Allocated only when either penalty is set.
	counts   []int32
	returned []int32
}

// NewSampler returns a sampler for a vocabulary of vocab tokens.
func NewSampler(cfg Sampling, vocab int) (*Sampler, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if vocab <= 0 {
		return nil, fmt.Errorf("vocabulary of %d tokens: expected a positive size", vocab)
	}
	s := &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9E3779B97F4A7C15)),
		scores: make([]float32, vocab), seen: make([]uint32, vocab)}
	if cfg.Temperature > 0 {
		s.cand, s.probs = make([]int32, vocab), make([]float64, vocab)
		s.heap = make([]float32, 0, min(cfg.TopK, vocab))
	}
	if cfg.PresencePenalty != 0 || cfg.FrequencyPenalty != 0 {
		// returned can hold every id, so appending to it never allocates.
		s.counts, s.returned = make([]int32, vocab), make([]int32, 0, vocab)
	}
	return s, nil
}

// Config returns the sampler's parameters.
func (s *Sampler) Config() Sampling { return s.cfg }

// Mask is a set of token ids, one bit per id (bit id%64 of word id/64); ids beyond its length
// are not in it.
type Mask []uint64

// Has reports whether id is in the mask.
func (m Mask) Has(id int) bool {
	return id >= 0 && id>>6 < len(m) && m[id>>6]&(1<<(id&63)) != 0
}

// Sample chooses the next token from logits ([vocab], not modified) given the sequence so far
// (history, for the repetition penalty).
func (s *Sampler) Sample(logits []float32, history []int) int {
	return s.SampleMasked(logits, history, nil)
}

// SampleMasked is Sample restricted to the tokens in allowed (nil allows every token): the
// others are removed before any processor runs, as constrained decoding needs. When no allowed
// token has a finite score, the first allowed token is returned, so the result is always in
// allowed as long as allowed is not empty.
func (s *Sampler) SampleMasked(logits []float32, history []int, allowed Mask) int {
	id := s.choose(logits, history, allowed)
	if s.counts != nil && id >= 0 && id < len(s.counts) {
		if s.counts[id] == 0 {
			s.returned = append(s.returned, int32(id))
		}
		s.counts[id]++
	}
	return id
}

func (s *Sampler) choose(logits []float32, history []int, allowed Mask) int {
	rep := float32(s.cfg.RepetitionPenalty)
	penalize := rep != 0 && rep != 1
	if s.cfg.Temperature == 0 && allowed == nil && !penalize && s.counts == nil {
		// Plain greedy: nothing changes the scores, so no copy of them (600 KB a token for a
		// 151,936-token vocabulary).
		return kernels.Argmax(logits)
	}
	sc := s.scores[:len(logits)]
	copy(sc, logits)
	if allowed != nil {
		applyMask(sc, allowed)
	}
	if penalize {
		s.penalize(sc, history, rep)
	}
	if s.counts != nil {
		pp, fp := float32(s.cfg.PresencePenalty), float32(s.cfg.FrequencyPenalty)
		for _, id := range s.returned {
			if int(id) < len(sc) {
				sc[id] -= pp + fp*float32(s.counts[id])
			}
		}
	}
	if s.cfg.Temperature == 0 || overflows(sc, s.cfg.Temperature) {
		id := kernels.Argmax(sc)
		if allowed != nil && !allowed.Has(id) {
			return firstAllowed(allowed, len(sc))
		}
		return id
	}
	if t := float32(s.cfg.Temperature); t != 1 {
		for i := range sc {
			sc[i] /= t
		}
	}
	cand := s.cand[:0]
	for id, v := range sc {
		if !math.IsInf(float64(v), -1) && !math.IsNaN(float64(v)) {
			cand = append(cand, int32(id))
		}
	}
	if len(cand) == 0 {
		if allowed != nil {
			return firstAllowed(allowed, len(sc))
		}
		return kernels.Argmax(logits)
	}
	if k := s.cfg.TopK; k > 0 && k < len(cand) {
		cand = s.topK(cand, k)
	}
	if p := s.cfg.TopP; p > 0 && p < 1 {
		cand = s.topP(cand, p)
	}
	if p := s.cfg.MinP; p > 0 {
		cand = s.minP(cand, p)
	}
	probs := s.softmax(cand)
	r := s.rng.Float64()
	for i, p := range probs {
		r -= p
		if r < 0 {
			return int(cand[i])
		}
	}
	return int(cand[len(cand)-1]) // r was within rounding of 1
}

// overflows reports whether dividing the largest score by temperature t would overflow float32
// (with a factor of 2 to spare for rounding): then the largest scores would all become +Inf and
// their softmax NaN. Such a temperature (1e-40 and smaller, for ordinary logits) leaves all the
// probability on the largest score anyway, so the caller decodes greedily. Scores that overflow
// to -Inf are harmless: their probability was 0 already.
func overflows(sc []float32, t float64) bool {
	t32 := float32(t)
	switch {
	case t32 >= 1:
		return false
	case t32 == 0:
		return true
	}
	m := sc[kernels.Argmax(sc)]
	return m > float32(math.MaxFloat32/2)*t32 && !math.IsInf(float64(m), 1)
}

// penalize applies HF's RepetitionPenaltyLogitsProcessor: each distinct id of history once.
func (s *Sampler) penalize(sc []float32, history []int, p float32) {
	s.stamp++
	if s.stamp == 0 { // wrapped: forget every old mark
		clear(s.seen)
		s.stamp = 1
	}
	for _, id := range history {
		if id < 0 || id >= len(sc) || s.seen[id] == s.stamp {
			continue
		}
		s.seen[id] = s.stamp
		if v := sc[id]; v < 0 {
			sc[id] = v * p
		} else {
			sc[id] = v / p
		}
	}
}

// topK keeps the candidates whose score is at least the k-th largest (HF's TopKLogitsWarper:
// scores below the k-th value are removed, so ties with the k-th survive). The k-th largest is
// found with a min-heap of k scores in one pass, not a sort of the whole vocabulary.
func (s *Sampler) topK(cand []int32, k int) []int32 {
	sc := s.scores
	h := s.heap[:0]
	for _, id := range cand {
		v := sc[id]
		if len(h) < k {
			h = append(h, v)
			for i := len(h) - 1; i > 0 && h[(i-1)/2] > h[i]; i = (i - 1) / 2 { // sift up
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
			continue
		}
		if v <= h[0] {
			continue
		}
		h[0] = v
		for i := 0; ; { // sift down
			c := 2*i + 1
			if c >= len(h) {
				break
			}
			if c+1 < len(h) && h[c+1] < h[c] {
				c++
			}
			if h[i] <= h[c] {
				break
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	kth := h[0]
	kept := cand[:0]
	for _, id := range cand {
		if sc[id] >= kth {
			kept = append(kept, id)
		}
	}
	return kept
}

// topP implements HF's TopPLogitsWarper: sort ascending, remove the tokens whose cumulative
// probability is at most 1-p, always keeping the most likely one.
func (s *Sampler) topP(cand []int32, p float64) []int32 {
	sc := s.scores
	m, sum := s.normalizer(cand)
	// Tokens rarer than (1-p)/n are removed whatever the order: all of them together weigh
	// less than 1-p and they come first in ascending order. Setting them aside before sorting
	// keeps the sort short for peaked distributions; their mass still counts.
	floor := (1 - p) / float64(len(cand))
	removed := 0.0
	kept := cand[:0]
	for _, id := range cand {
		if q := math.Exp(float64(sc[id]-m)) / sum; q < floor {
			removed += q
			continue
		}
		kept = append(kept, id)
	}
	slices.SortFunc(kept, func(a, b int32) int { return cmpDesc(sc[b], sc[a]) }) // ascending
	cum, drop := removed, 0
	for _, id := range kept[:len(kept)-1] {
		cum += math.Exp(float64(sc[id]-m)) / sum
		if cum > 1-p {
			break
		}
		drop++
	}
	return kept[drop:]
}

// minP implements HF's MinPLogitsWarper: remove tokens whose probability is below p times the
// top probability, always keeping the most likely one.
func (s *Sampler) minP(cand []int32, p float64) []int32 {
	sc := s.scores
	m, sum := s.normalizer(cand)
	// The top token has probability exp(0)/sum; compare in the exponent's domain.
	threshold := p / sum
	kept := cand[:0]
	for _, id := range cand {
		if math.Exp(float64(sc[id]-m))/sum >= threshold {
			kept = append(kept, id)
		}
	}
	return kept
}

// normalizer returns the largest score m of cand and sum(exp(score-m)), so that a candidate's
// probability among cand is exp(score-m)/sum.
func (s *Sampler) normalizer(cand []int32) (m float32, sum float64) {
	sc := s.scores
	m = float32(math.Inf(-1))
	for _, id := range cand {
		m = max(m, sc[id])
	}
	for _, id := range cand {
		sum += math.Exp(float64(sc[id] - m))
	}
	return m, sum
}

// softmax returns the probabilities of cand's scores among themselves.
func (s *Sampler) softmax(cand []int32) []float64 {
	m, sum := s.normalizer(cand)
	probs := s.probs[:len(cand)]
	for i, id := range cand {
		probs[i] = math.Exp(float64(s.scores[id]-m)) / sum
	}
	return probs
}

func cmpDesc(a, b float32) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// applyMask sets the scores of the tokens outside allowed to -Inf, a word of 64 ids at a time.
func applyMask(sc []float32, allowed Mask) {
	negInf := float32(math.Inf(-1))
	for w := 0; w*64 < len(sc); w++ {
		var bits uint64
		if w < len(allowed) {
			bits = allowed[w]
		}
		if bits == ^uint64(0) {
			continue
		}
		end := min(w*64+64, len(sc))
		for id := w * 64; id < end; id++ {
			if bits&(1<<(id&63)) == 0 {
				sc[id] = negInf
			}
		}
	}
}

// firstAllowed returns the smallest id below vocab in allowed, or 0 when there is none.
func firstAllowed(allowed Mask, vocab int) int {
	for w, word := range allowed {
		if word != 0 {
			if id := w*64 + bits.TrailingZeros64(word); id < vocab {
				return id
			}
			return 0
		}
	}
	return 0
}
