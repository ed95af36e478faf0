package runtime_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
	"github.com/anepack/anepack/runtime/testmodel"
)

// panicky is a backend's share of the forward pass that panics on a worker of the pool while
// fail is set, as a kernel does when it refuses its arguments; otherwise it writes zeros.
type panicky struct {
	pool *kernels.Pool
	fail *atomic.Bool
}

func (p panicky) NewProjector(batch int) (runtime.Projector, error) { return p, nil }

func (p panicky) Group(layer, g int, x []float32, n int, y []float32) error {
	p.pool.ParallelSlots(64, 1, func(slot, lo, hi int) {
		if p.fail.Load() && slot != 0 {
			panic("kernels.MatMulQ4Float: group 16: want 32, 64 or 128")
		}
	})
	clear(y)
	return nil
}

func (p panicky) Experts(layer, g int, x []float32, n int, _ *runtime.Routes, y []float32) error {
	return p.Group(layer, g, x, n, y)
}

func (p panicky) LMHead(x []float32, n int, logits []float32) error {
	clear(logits)
	return nil
}

// TestForwardPanicIsAnError runs a state and a batch pass over projections that panic on the
// pool's workers: Forward must return an error naming the panic (not kill the process), and the
// same state must work again afterwards from the position its cache is valid to.
func TestForwardPanicIsAnError(t *testing.T) {
	m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny", "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pool := kernels.NewPool(4)
	defer pool.Close()
	var fail atomic.Bool
	d, err := runtime.NewDecoder(m, panicky{pool, &fail}, runtime.DecoderOptions{Name: "test", Pool: pool, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.NewState(64)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logits := make([]float32, m.Config.VocabSize)
	if err := st.Forward([]int{1, 2, 3}, 0, logits); err != nil {
		t.Fatal(err)
	}
	batch, err := d.NewBatch(8, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	fail.Store(true)
	// Workers may sit a call out (one that starts after the call began), so a pass may take
	// several tries before a worker runs a chunk; each try must fail cleanly or succeed.
	failed := func(run func() error) error {
		for range 1000 {
			if err := run(); err != nil {
				return err
			}
		}
		t.Fatal("no pass failed in 1000 tries: no worker took part")
		return nil
	}
	for name, run := range map[string]func() error{
		"state": func() error { return st.Forward([]int{4}, 3, logits) },
		"batch": func() error {
			return batch.Forward([]runtime.BatchStep{{State: st, Tokens: []int{4}, Pos: 3, Logits: logits}})
		},
	} {
		err := failed(run)
		var pe *kernels.PanicError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "group 16: want 32, 64 or 128") {
			t.Fatalf("%s: the failed pass returned %v; want an error holding the kernel's panic", name, err)
		}
		if !strings.Contains(string(pe.Stack), "panicky") {
			t.Errorf("%s: the error's stack is not the worker's:\n%s", name, pe.Stack)
		}
	}
	fail.Store(false)
	if err := st.Forward([]int{4}, 3, logits); err != nil {
		t.Fatalf("after the failed passes: %v", err)
	}
}
