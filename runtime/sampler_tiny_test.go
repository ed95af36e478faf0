package runtime

import "testing"

// TestTinyTemperatureIsGreedy: temperatures so small that dividing the logits by them overflows
// float32 (1e-40 is a subnormal float32, 1e-300 rounds to 0) decode greedily, with a mask and
// penalties too. They overflowed the scores to ±Inf, the softmax was NaN and the sampler
// returned its last candidate whatever the logits said.
func TestTinyTemperatureIsGreedy(t *testing.T) {
	logits := []float32{0.5, 3, -2, 1, 2.5, 0}
	for _, temp := range []float64{1e-40, 1e-45, 1e-300, 5e-324, 1e-38} {
		for seed := range uint64(20) {
			s, err := NewSampler(Sampling{Temperature: temp, TopP: 0.9, TopK: 4, Seed: seed}, len(logits))
			if err != nil {
				t.Fatal(err)
			}
			if id := s.Sample(logits, nil); id != 1 {
				t.Fatalf("temperature %g, seed %d: token %d; want the greedy 1", temp, seed, id)
			}
			if id := s.SampleMasked(logits, nil, Mask{1<<0 | 1<<4 | 1<<5}); id != 4 {
				t.Fatalf("temperature %g, seed %d, masked: token %d; want the greedy allowed 4", temp, seed, id)
			}
			p, err := NewSampler(Sampling{Temperature: temp, RepetitionPenalty: 10, PresencePenalty: 1, Seed: seed}, len(logits))
			if err != nil {
				t.Fatal(err)
			}
			if id := p.Sample(logits, []int{1}); id != 4 {
				t.Fatalf("temperature %g, seed %d, penalized: token %d; want 4", temp, seed, id)
			}
		}
	}
}
