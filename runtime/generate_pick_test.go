package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/anepack/anepack/runtime"
)

// TestGeneratePick: a Pick function replaces the sampler. It sees the logits the model computed
// (those of the greedy reference) and the sequence so far, prompt first, and its choices are
// the generated tokens.
func TestGeneratePick(t *testing.T) {
	m, b, c := setup(t)
	sess := newSession(t, m, b, 64)
	greedy, err := sess.Generate(context.Background(), c.PromptIDs, runtime.GenerateOptions{MaxTokens: 4, EOS: []int{},
		Sampling: runtime.Sampling{TopP: 1, RepetitionPenalty: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	want := []int{11, 12, 13, 14}
	res, err := sess.Generate(context.Background(), c.PromptIDs, runtime.GenerateOptions{MaxTokens: 4, EOS: []int{},
		Sampling: runtime.Sampling{Temperature: -1}, // invalid, and unused when Pick is set
		Pick: func(logits []float32, history []int) int {
			if len(logits) != m.Config.VocabSize {
				t.Fatalf("Pick got %d logits; want %d", len(logits), m.Config.VocabSize)
			}
			if wantHist := append(slices.Clone(c.PromptIDs), want[:calls]...); !slices.Equal(history, wantHist) {
				t.Fatalf("call %d: history %v; want %v", calls, history, wantHist)
			}
			if calls == 0 {
				best := 0
				for i, v := range logits {
					if v > logits[best] {
						best = i
					}
				}
				if best != greedy.Tokens[0] {
					t.Fatalf("the logits of the first call have their maximum at %d; greedy decoding picked %d", best, greedy.Tokens[0])
				}
			}
			calls++
			return want[calls-1]
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, want) || calls != 4 || res.Reason != runtime.StopLength {
		t.Fatalf("tokens %v after %d calls (%s); want %v", res.Tokens, calls, res.Reason, want)
	}
}
