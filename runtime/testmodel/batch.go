package testmodel

import (
	"fmt"
	"math"
	"slices"

	"github.com/anepack/anepack/runtime"
)

// BatchChunk is the prompt chunk CheckBatch feeds per pass: prime, so that chunk boundaries fall
// anywhere relative to sliding windows and the backends' own pass sizes.
const BatchChunk = 37

// CheckBatch runs g's prompts through backend b (of model m) twice: each alone (the prompt in one Forward,
// then greedy decode steps), and all together through one runtime.Batch, where sequence i joins
// at pass 2i (so prompt chunks of newcomers share passes with the decode steps of the others)
// and decodes 3+2i tokens (so sequences leave at different times). Every batched logit must be
// within tol of the same sequence's logit alone, and every greedy token must be the same. It
// returns the largest difference seen.
func CheckBatch(m *runtime.Model, b runtime.Backend, g *Golden, tol float64) (float64, error) {
	batcher, ok := b.(runtime.Batcher)
	if !ok {
		return 0, fmt.Errorf("backend %s does not implement runtime.Batcher", b.Name())
	}
	vocab := m.Config.VocabSize
	n := len(g.Cases)
	steps := func(i int) int { return 3 + 2*i }
	// Alone: the logits before each generated token, per case.
	alone := make([][][]float32, n)
	tokens := make([][]int, n)
	for i, c := range g.Cases {
		st, err := b.NewState(len(c.PromptIDs) + steps(i))
		if err != nil {
			return 0, err
		}
		logits := make([]float32, vocab)
		pos := 0
		in := c.PromptIDs
		for j := 0; j < steps(i); j++ {
			if err := st.Forward(in, pos, logits); err != nil {
				st.Close()
				return 0, fmt.Errorf("%s alone, step %d: %w", c.Name, j, err)
			}
			alone[i] = append(alone[i], slices.Clone(logits))
			t := argmax(logits)
			tokens[i] = append(tokens[i], t)
			pos += len(in)
			in = []int{t}
		}
		st.Close()
	}

	// Together.
	batch, err := batcher.NewBatch(n*BatchChunk, n)
	if err != nil {
		return 0, err
	}
	defer batch.Close()
	type seq struct {
		st     runtime.State
		pos    int   // tokens run so far
		next   []int // what to run next: the rest of the prompt, or the last token
		got    []int
		logits []float32
	}
	seqs := make([]*seq, n)
	defer func() {
		for _, s := range seqs {
			if s != nil {
				s.st.Close()
			}
		}
	}()
	worst := 0.0
	for pass := 0; ; pass++ {
		var batchSteps []runtime.BatchStep
		var in []*seq
		active := false
		for i, c := range g.Cases {
			if pass < 2*i {
				active = true
				continue
			}
			if seqs[i] == nil {
				st, err := b.NewState(len(c.PromptIDs) + steps(i))
				if err != nil {
					return worst, err
				}
				seqs[i] = &seq{st: st, next: c.PromptIDs, logits: make([]float32, vocab)}
			}
			s := seqs[i]
			if len(s.got) == steps(i) {
				continue
			}
			active = true
			run := s.next[:min(len(s.next), BatchChunk)]
			step := runtime.BatchStep{State: s.st, Tokens: run, Pos: s.pos}
			if len(run) == len(s.next) {
				step.Logits = s.logits
			}
			batchSteps = append(batchSteps, step)
			in = append(in, s)
		}
		if !active {
			break
		}
		if len(batchSteps) == 0 {
			continue
		}
		if err := batch.Forward(batchSteps); err != nil {
			return worst, fmt.Errorf("pass %d: %w", pass, err)
		}
		for k, s := range in {
			st := batchSteps[k]
			s.pos += len(st.Tokens)
			s.next = s.next[len(st.Tokens):]
			if st.Logits == nil {
				continue
			}
			i := slices.Index(seqs, s)
			j := len(s.got)
			for v, want := range alone[i][j] {
				d := math.Abs(float64(s.logits[v]) - float64(want))
				if math.IsNaN(d) || d > tol {
					return max(worst, d), fmt.Errorf("%s, generated token %d (pass %d): logit %d is %g batched and %g alone", g.Cases[i].Name, j, pass, v, s.logits[v], want)
				}
				worst = max(worst, d)
			}
			t := argmax(s.logits)
			if t != tokens[i][j] {
				return worst, fmt.Errorf("%s, generated token %d: %d batched, %d alone", g.Cases[i].Name, j, t, tokens[i][j])
			}
			s.got = append(s.got, t)
			s.next = []int{t}
		}
	}
	return worst, nil
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
