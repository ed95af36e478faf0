package cpu

import (
	"context"
	"errors"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestSessionBatchGenerators drives several generations the way a server does: each a Session
// and a Generator, prompts run in chunks through one SessionBatch beside the decode steps of
// the others, sequences joining at different passes and one prompt continuing a cached turn.
// Each must produce exactly the tokens and text Session.Generate produces for it alone.
func TestSessionBatchGenerators(t *testing.T) {
	for _, name := range []string{"qwen2-tiny", "gemma3-tiny", "qwen3.5-tiny"} {
		t.Run(name, func(t *testing.T) {
			m, b := open(t, name, "f16")
			g := testmodel.LoadGolden(t, name)
			type job struct {
				prompt []int
				sess   *runtime.Session
				gen    *runtime.Generator
				next   []int // tokens to run: the rest of the prompt, or the last pick
				done   bool
			}
			opts := func(i int) runtime.GenerateOptions {
				return runtime.GenerateOptions{MaxTokens: 4 + 3*i, EOS: []int{}, Sampling: runtime.Sampling{Temperature: 0}}
			}
			var prompts [][]int
			for _, c := range g.Cases {
				prompts = append(prompts, c.PromptIDs)
			}
			// A second turn: the first prompt, a reply, and more, so that its session reuses
			// the cached first turn.
			turn := append(slices.Clone(prompts[0]), 11, 12, 13)
			prompts = append(prompts, turn)

			// Alone.
			var want []*runtime.Result
			for i, p := range prompts {
				s, err := runtime.NewSession(m, b, 1024)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Generate(context.Background(), p, opts(i))
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, res)
			}

			// Together: at most 3 sequences and 48 tokens per pass, prompts in chunks of 16.
			sb, err := runtime.NewSessionBatch(b, 48, 3, 16)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			jobs := make([]*job, len(prompts))
			var last *runtime.Session // the first job's session, reused by the second turn
			for i, p := range prompts {
				s := last
				if i != len(prompts)-1 {
					if s, err = runtime.NewSession(m, b, 1024); err != nil {
						t.Fatal(err)
					}
					defer s.Close()
				}
				if i == 0 {
					last = s
				}
				jobs[i] = &job{prompt: p, sess: s}
			}
			started := 0
			for pass := 0; pass < 10000; pass++ {
				// The second turn waits for the first job's session.
				for started < len(jobs) && (started < len(jobs)-1 || jobs[0].done) && started <= pass/3 {
					j := jobs[started]
					if j.gen, err = j.sess.NewGenerator(j.prompt, opts(started)); err != nil {
						t.Fatal(err)
					}
					n, err := j.sess.Reuse(j.prompt)
					if err != nil {
						t.Fatal(err)
					}
					if started == len(jobs)-1 && n == 0 {
						t.Fatal("the second turn reused nothing of the first")
					}
					j.gen.Result().Reused = n
					j.next = j.prompt[n:]
					started++
				}
				for _, j := range jobs[:started] {
					if j.done {
						continue
					}
					run := j.next[:min(len(j.next), sb.MaxStep())]
					if err := sb.Add(j.sess, run, len(run) == len(j.next)); errors.Is(err, runtime.ErrBatchFull) {
						continue
					} else if err != nil {
						t.Fatal(err)
					}
					j.next = j.next[len(run):]
				}
				if sb.Len() == 0 {
					if started == len(jobs) {
						break
					}
					continue
				}
				if err := sb.Run(); err != nil {
					t.Fatal(err)
				}
				for _, j := range jobs[:started] {
					if j.done || len(j.next) > 0 || j.sess.Logits() == nil {
						continue
					}
					id, more, err := j.gen.Next()
					if err != nil {
						t.Fatal(err)
					}
					if !more {
						j.done = true
						continue
					}
					j.next = []int{id}
				}
			}
			for i, j := range jobs {
				res, err := j.gen.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if !j.done || !slices.Equal(res.Tokens, want[i].Tokens) || res.Text != want[i].Text || res.Reason != want[i].Reason {
					t.Errorf("job %d: batched %v %q (%s), alone %v %q (%s)", i, res.Tokens, res.Text, res.Reason, want[i].Tokens, want[i].Text, want[i].Reason)
				}
			}
		})
	}
}

// TestPassesKeepNoTokens: a batch pass and a state's Forward keep no reference to the callers'
// token slices once they return. A server's decode tokens live in its request's job, with the
// request's sampler and generator; a batch that kept the last pass's slices kept up to seqs
// finished requests alive on an idle server.
func TestPassesKeepNoTokens(t *testing.T) {
	_, b := open(t, "qwen2-tiny", "f16")
	st, err := b.NewState(16)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	batch, err := b.NewBatch(8, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	// owner holds the tokens as a request's job does; released says when it was collected.
	type owner struct {
		tokens [2]int
		big    [1 << 16]byte // a sampler's worth of memory, so that it is its own allocation
	}
	run := func(name string, pass func(tokens []int) error) {
		o := &owner{tokens: [2]int{1, 2}}
		released := make(chan struct{})
		goruntime.AddCleanup(o, func(ch chan struct{}) { close(ch) }, released)
		if err := pass(o.tokens[:]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o = nil
		for range 50 {
			goruntime.GC()
			select {
			case <-released:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Errorf("%s still holds the caller's tokens after returning", name)
	}
	run("Batch.Forward", func(tokens []int) error {
		return batch.Forward([]runtime.BatchStep{{State: st, Tokens: tokens, Pos: 0}})
	})
	run("State.Forward", func(tokens []int) error { return st.Forward(tokens, 2, nil) })
}
