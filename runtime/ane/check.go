package ane

import (
	"fmt"
	"math"
	"sync"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
)

// checkTol bounds the difference between an evaluator's output and the sim's, relative to the
// largest magnitude of the sim's output: both round every op to fp16 (2^-11 relative), and
// only the accumulation order of the dot products may differ, so a correct program stays far
// below 1 %, while the known ways to get "plausible garbage" (wrong layout, wrong binding
// order, zeros from narrow surfaces; docs/ane.md, "Surfaces") are off by the output's own size.
const checkTol = 1e-2

// checkedBackend evaluates every program with an evaluator and, on each program's first
// evaluation, with the sim as well, and fails with the program's name when they disagree: the
// way to find out on new hardware (or a new OS) which program, if any, the ANE computes
// differently from the sim that the tests verify.
type checkedBackend struct {
	eval   dispatch.Backend
	ref    dispatch.Backend
	ranges rangeLog // the reference programs' fp16 headroom, when the reference tracks it
}

// Load loads k on the evaluator and in the sim.
func (b *checkedBackend) Load(k *format.Program, text []byte, weights map[string][]byte) (dispatch.Loaded, error) {
	l, err := b.eval.Load(k, text, weights)
	if err != nil {
		return nil, err
	}
	r, err := b.ref.Load(k, text, weights)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("check: %w", err)
	}
	if s, ok := b.ref.(*dispatch.SimBackend); ok && s.TrackRange {
		b.ranges.add(k.Name, r)
	}
	return &checkedLoaded{name: k.Name, eval: l, ref: r, seq: k.Seq}, nil
}

// checkedLoaded is one program on both evaluators until its first evaluation was compared.
type checkedLoaded struct {
	name      string
	eval, ref dispatch.Loaded
	seq       int
	mu        sync.Mutex
	checked   bool
}

// Eval evaluates; the first time, it also evaluates in the sim and compares the live columns.
func (l *checkedLoaded) Eval(in, out [][]uint16, live int) error {
	if err := l.eval.Eval(in, out, live); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checked {
		return nil
	}
	want := make([][]uint16, len(out))
	for i := range out {
		want[i] = make([]uint16, len(out[i]))
	}
	if err := l.ref.Eval(in, want, live); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for i := range out {
		if err := compareColumns(out[i], want[i], l.seq, live); err != nil {
			return fmt.Errorf("check: program %s output %d differs from the simulator: %v", l.name, i, err)
		}
	}
	l.checked = true
	l.ref.Close()
	return nil
}

// Close closes both programs.
func (l *checkedLoaded) Close() error {
	if !l.checked {
		l.ref.Close()
	}
	return l.eval.Close()
}

// compareColumns compares the first live columns of two channel-major fp16 [C, seq] tensors.
func compareColumns(got, want []uint16, seq, live int) error {
	var worst, scale float64
	at := 0
	for c := 0; c < len(want)/seq; c++ {
		for s := 0; s < live; s++ {
			i := c*seq + s
			g, w := float64(half.F16ToF32Scalar(got[i])), float64(half.F16ToF32Scalar(want[i]))
			scale = max(scale, math.Abs(w))
			if d := math.Abs(g - w); d > worst || math.IsNaN(d) {
				worst, at = d, i
			}
		}
	}
	if worst > checkTol*max(scale, 1e-3) || math.IsNaN(worst) {
		return fmt.Errorf("largest difference %.4g at channel %d column %d (the outputs reach %.4g)", worst, at/seq, at%seq, scale)
	}
	return nil
}
