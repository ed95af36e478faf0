package cpu

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
)

// qwen35 opens the Qwen3.5 golden model (f32) on a backend whose batch is 8 tokens, so prompts
// run in several passes.
func qwen35(t *testing.T) (*runtime.Model, *Backend) {
	t.Helper()
	m, _ := open(t, "qwen3.5-tiny", "f32")
	b, err := New(m, Options{Threads: 2, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return m, b
}

func ids(n, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i*7919 + seed*104729 + 13) % 150000
	}
	return out
}

// cold returns the logits after prompt on a fresh state, run as a resumed state runs it:
// prompt[:at] and then prompt[at:], so that every token meets the same products (a batch of
// one token takes the GEMV path, whose float32 sums differ in the last bits from the GEMM's).
func cold(t *testing.T, b *Backend, prompt []int, at int) []float32 {
	t.Helper()
	st, err := b.NewState(512)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if at > 0 {
		if err := st.Forward(prompt[:at], 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	logits := make([]float32, b.Model().Config.VocabSize)
	if err := st.Forward(prompt[at:], at, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

// equalRows fails unless got and want are the same logits, bit for bit.
func equalRows(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: logit %d is %v; a cold run gives %v", what, i, got[i], want[i])
		}
	}
}

// TestRecurrentResume: the Gated DeltaNet state can be resumed where the state keeps a
// snapshot (before the last token of each Forward of several tokens), at its present position
// and at 0, and nowhere else; resuming gives exactly the logits of a cold run; the state keeps
// the last four snapshots.
func TestRecurrentResume(t *testing.T) {
	m, b := qwen35(t)
	vocab := m.Config.VocabSize
	seq := ids(100, 1)
	st, err := b.NewState(200)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first := make([]float32, vocab)
	if err := st.Forward(seq[:60], 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Forward(seq[60:], 60, first); err != nil {
		t.Fatal(err)
	}
	equalRows(t, "two passes", first, cold(t, b, seq, 0))
	// 3 DeltaNet layers of 4 value heads of 16x16 values and a scale, and 3 steps of 128 channels.
	if n, want := b.RecurrentStateBytes(), 3*(4*(16*16+1)+3*128)*4; n != want {
		t.Errorf("RecurrentStateBytes() = %d; want %d", n, want)
	}
	r := st.(runtime.Resumer)
	for pos, want := range map[int]int{100: 100, 150: 100, 99: 99, 98: 59, 60: 59, 59: 59, 58: 0, 0: 0} {
		if got := r.ResumeAt(pos); got != want {
			t.Errorf("ResumeAt(%d) = %d; want %d (snapshots at 59 and 99, present 100)", pos, got, want)
		}
	}
	err = st.Forward(seq[80:], 80, first)
	if err == nil || !strings.Contains(err.Error(), "cannot continue from position 80") || !strings.Contains(err.Error(), "continue from 59") {
		t.Errorf("Forward from 80: %v; want an error naming 59", err)
	}
	// Back to 99 (the last token again), then to 59 with other tokens: each equals a cold run.
	got := make([]float32, vocab)
	if err := st.Forward(seq[99:], 99, got); err != nil {
		t.Fatal(err)
	}
	equalRows(t, "from the snapshot at 99", got, cold(t, b, seq, 99))
	other := append(slices.Clone(seq[:59]), ids(30, 2)...)
	if err := st.Forward(other[59:], 59, got); err != nil {
		t.Fatal(err)
	}
	equalRows(t, "from the snapshot at 59 with other tokens", got, cold(t, b, other, 59))
	// The snapshot at 99 belonged to the replaced tail: past it again, 99 is not resumable.
	if err := st.Forward(ids(20, 3), 89, nil); err != nil { // snapshots at 59, 88, 108
		t.Fatal(err)
	}
	if p := r.ResumeAt(99); p != 88 {
		t.Errorf("after replacing the tail from 59, ResumeAt(99) = %d; want 88", p)
	}
	// Six more passes of 4 tokens (snapshots at 112, 116, ..., 132): only the last four remain.
	for i := 0; i < 6; i++ {
		if err := st.Forward(ids(4, 4+i), 109+4*i, nil); err != nil {
			t.Fatal(err)
		}
	}
	for pos, want := range map[int]int{133: 133, 132: 132, 131: 128, 121: 120, 119: 0, 70: 0} {
		if got := r.ResumeAt(pos); got != want {
			t.Errorf("ResumeAt(%d) = %d; want %d (snapshots at 120, 124, 128, 132)", pos, got, want)
		}
	}
	// A decode step takes no snapshot and allocates nothing.
	pos := 133
	tok := []int{42}
	if a := testing.AllocsPerRun(5, func() {
		if err := st.Forward(tok, pos, got); err != nil {
			t.Fatal(err)
		}
		pos++
	}); a != 0 {
		t.Errorf("a decode step allocates %.1f times", a)
	}
}

// TestRecurrentChatTurns runs chat turns through a Session: a turn that repeats the previous
// prompt, and a turn whose prompt continues the first prompt with other tokens than the ones
// generated (the way a chat template re-renders a reply), resume from the snapshot before the
// prompt's last token and give exactly the logits of a cold run.
func TestRecurrentChatTurns(t *testing.T) {
	m, b := qwen35(t)
	ctx := context.Background()
	s, err := runtime.NewSession(m, b, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turn1 := ids(150, 4) // two prefill passes of the session: 128 tokens, then 22
	if _, err := s.Prefill(ctx, turn1); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids(5, 5) {
		if err := s.Append(id); err != nil {
			t.Fatal(err)
		}
	}
	// Regenerate: the same prompt again.
	reused, err := s.Prefill(ctx, turn1)
	if err != nil || reused != 149 {
		t.Fatalf("the same prompt again: reused %d, %v; want 149 (the snapshot before its last token)", reused, err)
	}
	equalRows(t, "regenerated turn", s.Logits(), cold(t, b, turn1, 149))
	for _, id := range ids(5, 8) {
		if err := s.Append(id); err != nil {
			t.Fatal(err)
		}
	}
	// The next turn: the first prompt, the reply rendered differently, a new question.
	turn2 := append(slices.Clone(turn1), ids(40, 6)...)
	reused, err = s.Prefill(ctx, turn2)
	if err != nil || reused != 149 {
		t.Fatalf("second turn: reused %d, %v; want 149", reused, err)
	}
	equalRows(t, "second turn", s.Logits(), cold(t, b, turn2, 149))
	// A prompt sharing only part of the first: no snapshot inside it but the first pass's.
	turn3 := append(slices.Clone(turn1[:140]), ids(3, 7)...)
	reused, err = s.Prefill(ctx, turn3)
	if err != nil || reused != 127 {
		t.Fatalf("a prompt sharing 140 tokens: reused %d, %v; want 127 (the first pass's snapshot)", reused, err)
	}
	equalRows(t, "third turn", s.Logits(), cold(t, b, turn3, 127))
}
