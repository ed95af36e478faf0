package ane

import (
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
)

// loadEval loads the probe program p through backend and evaluates it once.
func loadEval(t *testing.T, backend dispatch.Backend, p *ProbeProgram) []uint16 {
	t.Helper()
	l, err := backend.Load(p.Record(), p.MIL, p.Blobs)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	defer l.Close()
	out := make([]uint16, p.Out.Bytes/2)
	if err := l.Eval([][]uint16{p.X}, [][]uint16{out}, probeSeq); err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return out
}

// TestEvaluatorsBlobLayout: the sim evaluator in the split layout gives bit for bit what it
// gives packed, and the ANE evaluator (over the fake framework) hands the split files to the
// framework as copies and the bundle's own bytes without a copy.
func TestEvaluatorsBlobLayout(t *testing.T) {
	p := probeCase(t, "uint4-896-"+mil.LayoutPacked)
	packed := loadEval(t, &simBackend{budget: -1}, p)
	split := loadEval(t, &simBackend{budget: -1, layout: mil.LayoutSplit}, p)
	if !slices.Equal(packed, split) {
		t.Error("the sim gives different outputs in the two layouts")
	}
	if _, ok := p.Check(split); !ok {
		t.Error("wrong output")
	}

	daemon := newFakeDaemon()
	d, _ := newFakeDriver(daemon, t.TempDir())
	for _, layout := range []string{mil.LayoutPacked, mil.LayoutSplit} {
		out := loadEval(t, &driverBackend{d: d, layout: layout}, p)
		if !slices.Equal(out, packed) {
			t.Errorf("%s: the ANE evaluator (fake framework) differs from the sim", layout)
		}
		nm := daemon.newModels[len(daemon.newModels)-1]
		w := nm.weights[probeWeightPath]
		same := len(w) > 0 && &w[0] == &p.Blobs[probeWeightPath][0]
		if layout == mil.LayoutPacked && (!nm.borrow || !same) {
			t.Errorf("packed: borrow %v, same bytes %v; want the bundle's bytes without a copy", nm.borrow, same)
		}
		if layout == mil.LayoutSplit && (nm.borrow || len(nm.weights) != 3) {
			t.Errorf("split: borrow %v, %d files", nm.borrow, len(nm.weights))
		}
	}
}

// TestHeadroom: with Check the backend reports each evaluated program's largest activation
// against fp16's 65504, smallest headroom first: on the sim evaluator over every evaluation,
// otherwise over the first evaluation the check repeats in the simulator. A program whose input
// is near fp16's limit is reported as overflowing where the fp16 chain is not.
func TestHeadroom(t *testing.T) {
	id := probeCase(t, selfTestName)
	for i := range id.X {
		id.X[i] = half.F32ToF16Scalar(60000)
	}
	id.X[7] = half.F32ToF16Scalar(-65000)
	chain := probeCase(t, "fp16-896-"+mil.LayoutPacked)

	peak := half.F16ToF32Scalar(id.X[7])
	sim := func() *simBackend { return &simBackend{budget: -1, sim: dispatch.SimBackend{TrackRange: true}} }
	d, _ := newFakeDriver(newFakeDaemon(), t.TempDir())
	for _, c := range []struct {
		eval   dispatch.Backend
		covers string
	}{
		{sim(), "every evaluation"}, // --backend sim --ane-check without the check's wrapper
		{&checkedBackend{eval: sim(), ref: &dispatch.SimBackend{TrackRange: true}}, "every evaluation"},
		{&checkedBackend{eval: &driverBackend{d: d}, ref: &dispatch.SimBackend{TrackRange: true}}, "first evaluation"},
	} {
		b := &Backend{counter: &countingBackend{Backend: c.eval}}
		if r, _ := b.Headroom(); len(r) != 0 {
			t.Errorf("before any evaluation: %+v", r)
		}
		loadEval(t, c.eval, chain)
		loadEval(t, c.eval, id)
		ranges, covers := b.Headroom()
		if !strings.Contains(covers, c.covers) || len(ranges) < 2 {
			t.Fatalf("%T: %d ranges covering %q", c.eval, len(ranges), covers)
		}
		if r := ranges[0]; r.Program != selfTestName || r.Max != -peak || r.Headroom() > 1.01 {
			t.Errorf("%T: first %+v; want the self-test near the limit", c.eval, r)
		}
		if r := ranges[len(ranges)-1]; r.Program != chain.Name || r.Overflows() || r.Headroom() < 100 {
			t.Errorf("%T: last %+v; want the fp16 chain with room", c.eval, r)
		}
	}
	plain := &Backend{counter: &countingBackend{Backend: &simBackend{budget: -1}}}
	loadEval(t, plain.counter, id)
	if r, _ := plain.Headroom(); len(r) != 0 {
		t.Errorf("without Check: %+v", r)
	}
}
