package ane

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
)

// Evaluators: what turns a program into numbers. The dispatch code above them is the same.
const (
	// EvalANE compiles each program for the Apple Neural Engine with the purego driver
	// (darwin/arm64 only; elsewhere ErrUnavailable).
	EvalANE = "ane"
	// EvalSim executes each program's MIL text and weight blobs in the MIL simulator (package
	// mil), on any machine.
	EvalSim = "sim"
)

// driverBackend adapts the driver to dispatch.Backend, so the ANE runs behind the same
// dispatch.Dispatcher as the sim: each Load is one Compile (which the driver counts against
// MaxCompiles, or satisfies from the aned daemon's cache).
type driverBackend struct {
	d      *Driver
	layout string // blob layout: mil.LayoutPacked (or "") or mil.LayoutSplit
	expand bool   // rewrite quantized weights dense before compiling (Options.Constexpr)
}

// Load compiles (or loads from the daemon's cache) one program. The weights are sections of
// the bundle, which format.Open maps read-only on darwin and which stays mapped until after
// Backend.Close has closed every program: the framework gets them without a copy
// (docs/ane.md, "Memory").
func (b *driverBackend) Load(k *format.Program, text []byte, weights map[string][]byte) (dispatch.Loaded, error) {
	spec := Spec{MIL: text, Weights: weights, Layout: b.layout, Expand: b.expand, Borrow: true}
	for _, io := range k.Inputs {
		spec.Inputs = append(spec.Inputs, IO{Name: io.Name, Bytes: ioBytes(io)})
	}
	for _, io := range k.Outputs {
		spec.Outputs = append(spec.Outputs, IO{Name: io.Name, Bytes: ioBytes(io)})
	}
	p, err := b.d.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", k.Name, err)
	}
	return &driverLoaded{p: p, in: make([][]byte, len(k.Inputs)), out: make([][]byte, len(k.Outputs))}, nil
}

// ioBytes is the size of an fp16 [1, C, 1, S] tensor.
func ioBytes(io format.ProgramIO) int {
	n := 2
	for _, d := range io.Shape {
		n *= d
	}
	return n
}

// driverLoaded is a compiled program. Its buffers are reused between evaluations, so an
// evaluation allocates nothing here (dispatch.Dispatcher serialises the calls on one program).
type driverLoaded struct {
	p       *Program
	mu      sync.Mutex
	in, out [][]byte
}

// Eval runs the whole surface: the ANE computes every column whatever live is.
func (l *driverLoaded) Eval(in, out [][]uint16, live int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(in) != len(l.in) || len(out) != len(l.out) {
		return fmt.Errorf("ane: %d inputs and %d outputs; the program has %d and %d", len(in), len(out), len(l.in), len(l.out))
	}
	for i, b := range in {
		l.in[i] = u16Bytes(b)
	}
	for i, b := range out {
		l.out[i] = u16Bytes(b)
	}
	err := l.p.Eval(l.in, l.out)
	clear(l.in)
	clear(l.out)
	return err
}

// Close unloads the program.
func (l *driverLoaded) Close() error { return l.p.Close() }

// u16Bytes views fp16 values as their little-endian bytes (every platform with an ANE is
// little-endian, and runtime.NewModel refuses big-endian machines).
func u16Bytes(v []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))
}

// simBackend is the sim evaluator. It counts loads the way the ANE counts compiles: the sim
// could load any number of programs, but refusing past the same budget keeps `--backend sim`
// a faithful rehearsal of a run on the ANE, compile budget included; with the split blob
// layout it runs the rewritten programs the ANE would receive.
type simBackend struct {
	sim    dispatch.SimBackend
	mu     sync.Mutex
	loads  int
	budget int    // < 0: no limit
	layout string // blob layout, as for the ANE
	expand bool   // constexpr expansion, as for the ANE
	ranges rangeLog
}

// Load compiles k in the sim, or refuses with ErrCompileBudget once the budget is used.
func (b *simBackend) Load(k *format.Program, text []byte, weights map[string][]byte) (dispatch.Loaded, error) {
	b.mu.Lock()
	if b.budget >= 0 && b.loads >= b.budget {
		b.mu.Unlock()
		return nil, fmt.Errorf("program %s: %w", k.Name, ErrCompileBudget)
	}
	b.loads++
	b.mu.Unlock()
	if b.expand {
		t, w, err := mil.ExpandConstexpr(text, weights)
		if err != nil {
			return nil, fmt.Errorf("program %s: expanding quantized weights: %w", k.Name, err)
		}
		text, weights = t, w
	}
	if b.layout == mil.LayoutSplit {
		t, w, err := mil.SplitBlobs(text, weights)
		if err != nil {
			return nil, fmt.Errorf("program %s: blob layout split: %w", k.Name, err)
		}
		text, weights = t, w
	}
	l, err := b.sim.Load(k, text, weights)
	if err == nil && b.sim.TrackRange {
		b.ranges.add(k.Name, l)
	}
	return l, err
}

// rangeLog collects the sim programs that record their activations' range (fp16 headroom).
type rangeLog struct {
	mu       sync.Mutex
	programs []ProgramRange
	rangers  []dispatch.Ranger
}

// add records a loaded program if it reports its range.
func (l *rangeLog) add(name string, k dispatch.Loaded) {
	r, ok := k.(dispatch.Ranger)
	if !ok {
		return
	}
	l.mu.Lock()
	l.programs = append(l.programs, ProgramRange{Program: name})
	l.rangers = append(l.rangers, r)
	l.mu.Unlock()
}

// list returns the ranges recorded so far, of the programs that were evaluated.
func (l *rangeLog) list() []ProgramRange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ProgramRange
	for i, k := range l.programs {
		k.Range = l.rangers[i].Range()
		if k.Evals > 0 {
			out = append(out, k)
		}
	}
	return out
}

// countingBackend counts the programs loaded through it, whatever the evaluator.
type countingBackend struct {
	dispatch.Backend
	mu     sync.Mutex
	loaded int
}

// Load loads through the wrapped backend and counts successes.
func (b *countingBackend) Load(k *format.Program, text []byte, weights map[string][]byte) (dispatch.Loaded, error) {
	l, err := b.Backend.Load(k, text, weights)
	if err == nil {
		b.mu.Lock()
		b.loaded++
		b.mu.Unlock()
	}
	return l, err
}

func (b *countingBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loaded
}
