// Package dispatch runs a bundle's ANE programs on an evaluator: Backend and Loaded are the
// seam between program dispatch and evaluation. SimBackend implements them with package mil's
// simulator; package ane implements them with the darwin ANE driver, which compiles the same
// MIL text and blobs. Dispatcher, shared by both, picks the smallest bucket for a number of
// positions (splitting runs longer than the largest bucket), packs token-major float32
// activations into zero-padded channel-major fp16 rows, evaluates, and unpacks the live
// columns. The programs are the manifest's records (format.Program), their texts and weights the
// bundle's sections.
package dispatch

import (
	"fmt"
	"slices"
	"sync"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
)

// Backend turns programs into something that evaluates them. The sim (SimBackend) and the ANE
// driver (package ane, darwin) implement it; Dispatcher, the code that picks programs, packs
// activations and reads results, is the same for both.
type Backend interface {
	// Load prepares one program: k is its manifest record and text its MIL program. weights
	// maps each BLOBFILE path named in the text to the bytes of the whole blob file (typically
	// a slice of the memory-mapped bundle); the backend may keep references to them until
	// Close.
	Load(k *format.Program, text []byte, weights map[string][]byte) (Loaded, error)
}

// Loaded is one program ready to evaluate.
type Loaded interface {
	// Eval evaluates the program once. in and out are fp16 channel-major [1, C, 1, S] buffers in
	// the order of Program.Inputs and Program.Outputs (exactly C·S values each). live is the
	// number of leading columns the caller will read: a backend may compute only those (the
	// sim does for column-local programs) or all (the ANE always computes the whole surface).
	Eval(in, out [][]uint16, live int) error
	// Close releases the program (on the ANE: unload the model, free its surfaces).
	Close() error
}

// SimBackend evaluates programs with the MIL simulator (package mil).
type SimBackend struct {
	// Cache shares decoded weights between the buckets of one blob; nil disables sharing.
	Cache *mil.WeightCache
	// TrackRange makes every loaded program record its activations' largest magnitude; the
	// Loaded values then implement Ranger.
	TrackRange bool
}

// Ranger is implemented by the sim's loaded programs: the fp16 headroom of what they computed.
type Ranger interface {
	Range() mil.Range
}

// Load parses and compiles text and checks that its inputs and outputs are the program's.
func (b *SimBackend) Load(k *format.Program, text []byte, weights map[string][]byte) (Loaded, error) {
	p, err := mil.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", k.Name, err)
	}
	e, err := p.CompileWith(weights, mil.CompileOptions{Cache: b.Cache, TrackRange: b.TrackRange})
	if err != nil {
		return nil, fmt.Errorf("program %s: %w", k.Name, err)
	}
	if err := matchIO(k.Name, "input", k.Inputs, e.Inputs()); err != nil {
		return nil, err
	}
	if err := matchIO(k.Name, "output", k.Outputs, e.Outputs()); err != nil {
		return nil, err
	}
	return simLoaded{e}, nil
}

type simLoaded struct{ e *mil.Executable }

// Eval evaluates the executable; for column-local programs only the live columns.
func (s simLoaded) Eval(in, out [][]uint16, live int) error { return s.e.EvalColumns(in, out, live) }

// Close does nothing: the executable holds only Go memory.
func (s simLoaded) Close() error { return nil }

// Range returns the largest magnitudes recorded (with SimBackend.TrackRange).
func (s simLoaded) Range() mil.Range { return s.e.Range() }

// matchIO checks a program's declared I/O (manifest) against its program's.
func matchIO(program, what string, want []format.ProgramIO, got []mil.IO) error {
	if len(want) != len(got) {
		return fmt.Errorf("program %s: %d %ss listed, the program has %d", program, len(want), what, len(got))
	}
	for i, w := range want {
		g := got[i]
		dt, err := dtype.Parse(w.DType)
		if w.Name != g.Name || err != nil || dt.MIL() != g.Type.DType.String() || !slices.Equal(w.Shape, g.Type.Shape) {
			return fmt.Errorf("program %s: %s %d listed as %s %s %v, the program has %s %s", program, what, i, w.Name, w.DType, w.Shape, g.Name, g.Type)
		}
	}
	return nil
}

// Dispatcher runs a bundle's programs on a backend: it picks the bucket for a number of
// positions, packs token-major float32 activations into the channel-major fp16 layout of the
// ANE (zero-padded to the bucket), evaluates, and unpacks the live columns. Programs are loaded
// on first use, or all at once by LoadAll. Its methods are safe for concurrent use; calls on
// one program are serialised.
type Dispatcher struct {
	backend Backend
	section func(name string) ([]byte, error)
	mu      sync.Mutex
	groups  map[dispatchKey][]*slot // each sorted by Seq
}

type dispatchKey struct {
	kind         string
	layer, chunk int
}

type slot struct {
	mu      sync.Mutex
	k       format.Program
	l       Loaded
	in, out []uint16 // staging buffers, channel-major
	// ins and outs wrap in and out for Loaded.Eval, built once so a dispatch allocates nothing.
	ins, outs [1][]uint16
}

// NewDispatcher prepares to run programs, the manifest records of a bundle's programs, on
// backend. section returns the bytes of a bundle section: the MIL section holding a program's
// text (Program.MIL, at MILOffset for MILSize bytes) or one holding a blob file
// (Program.Weights[i].Section). Every program must have one f16 input and one f16 output of
// shape [1, C, 1, Seq], as package milgen generates them.
func NewDispatcher(backend Backend, programs []format.Program, section func(name string) ([]byte, error)) (*Dispatcher, error) {
	d := &Dispatcher{backend: backend, section: section, groups: map[dispatchKey][]*slot{}}
	for _, k := range programs {
		if len(k.Inputs) != 1 || len(k.Outputs) != 1 {
			return nil, fmt.Errorf("dispatch: program %s has %d inputs and %d outputs; the dispatcher needs one of each", k.Name, len(k.Inputs), len(k.Outputs))
		}
		for _, io := range []format.ProgramIO{k.Inputs[0], k.Outputs[0]} {
			if dt, err := dtype.Parse(io.DType); err != nil || dt != dtype.F16 || len(io.Shape) != 4 || io.Shape[0] != 1 || io.Shape[2] != 1 || io.Shape[3] != k.Seq {
				return nil, fmt.Errorf("dispatch: program %s: %s is %s %v; expected f16 [1, C, 1, %d]", k.Name, io.Name, io.DType, io.Shape, k.Seq)
			}
		}
		key := dispatchKey{k.Kind, k.Layer, k.Chunk}
		for _, s := range d.groups[key] {
			if s.k.Seq == k.Seq {
				return nil, fmt.Errorf("dispatch: programs %s and %s have the same bucket", s.k.Name, k.Name)
			}
		}
		d.groups[key] = append(d.groups[key], &slot{k: k})
	}
	for _, g := range d.groups {
		slices.SortFunc(g, func(a, b *slot) int { return a.k.Seq - b.k.Seq })
	}
	return d, nil
}

// LoadAll loads every program now (on the ANE: compiles them), in a fixed order: by kind,
// layer, chunk, then bucket.
func (d *Dispatcher) LoadAll() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys := make([]dispatchKey, 0, len(d.groups))
	for k := range d.groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b dispatchKey) int {
		if a.kind != b.kind {
			if a.kind < b.kind {
				return -1
			}
			return 1
		}
		if a.layer != b.layer {
			return a.layer - b.layer
		}
		return a.chunk - b.chunk
	})
	for _, key := range keys {
		for _, s := range d.groups[key] {
			s.mu.Lock()
			err := d.load(s)
			s.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// load loads s; the caller holds s.mu.
func (d *Dispatcher) load(s *slot) error {
	if s.l != nil {
		return nil
	}
	sec, err := d.section(s.k.MIL)
	if err != nil {
		return fmt.Errorf("dispatch: program %s: text %s: %w", s.k.Name, s.k.MIL, err)
	}
	if s.k.MILOffset < 0 || s.k.MILSize <= 0 || s.k.MILOffset > int64(len(sec)) || s.k.MILSize > int64(len(sec))-s.k.MILOffset {
		return fmt.Errorf("dispatch: program %s: text at %d for %d bytes is outside section %q of %d bytes", s.k.Name, s.k.MILOffset, s.k.MILSize, s.k.MIL, len(sec))
	}
	text := sec[s.k.MILOffset : s.k.MILOffset+s.k.MILSize]
	w := make(map[string][]byte, len(s.k.Weights))
	for _, kw := range s.k.Weights {
		b, err := d.section(kw.Section)
		if err != nil {
			return fmt.Errorf("dispatch: program %s: weights %s: %w", s.k.Name, kw.Section, err)
		}
		w[kw.Path] = b
	}
	l, err := d.backend.Load(&s.k, text, w)
	if err != nil {
		return err
	}
	s.l = l
	s.in = make([]uint16, s.k.Inputs[0].Shape[1]*s.k.Seq)
	s.out = make([]uint16, s.k.Outputs[0].Shape[1]*s.k.Seq)
	return nil
}

// Channels returns the input and output channel counts of a program group.
func (d *Dispatcher) Channels(kind string, layer, chunk int) (in, out int, err error) {
	g, err := d.group(kind, layer, chunk)
	if err != nil {
		return 0, 0, err
	}
	return g[0].k.Inputs[0].Shape[1], g[0].k.Outputs[0].Shape[1], nil
}

func (d *Dispatcher) group(kind string, layer, chunk int) ([]*slot, error) {
	d.mu.Lock()
	g := d.groups[dispatchKey{kind, layer, chunk}]
	d.mu.Unlock()
	if len(g) == 0 {
		return nil, fmt.Errorf("dispatch: no %s program for layer %d chunk %d", kind, layer, chunk)
	}
	return g, nil
}

// Run applies program group (kind, layer, chunk) to n positions: x holds n token-major rows of
// Cin values, y receives n rows of Cout values. n larger than the largest bucket is processed
// in pieces, each in the smallest bucket that holds it; every program maps each position
// independently, so the pieces give the same values as one pass.
func (d *Dispatcher) Run(kind string, layer, chunk int, x []float32, n int, y []float32) error {
	g, err := d.group(kind, layer, chunk)
	if err != nil {
		return err
	}
	cin, cout := g[0].k.Inputs[0].Shape[1], g[0].k.Outputs[0].Shape[1]
	if n < 1 || len(x) != n*cin || len(y) != n*cout {
		return fmt.Errorf("dispatch: %s layer %d chunk %d: %d positions need %d inputs and %d outputs; got %d and %d", kind, layer, chunk, n, n*cin, n*cout, len(x), len(y))
	}
	maxSeq := g[len(g)-1].k.Seq
	for done := 0; done < n; {
		m := min(n-done, maxSeq)
		s := g[len(g)-1]
		for _, c := range g {
			if c.k.Seq >= m {
				s = c
				break
			}
		}
		if err := d.runSlot(s, x[done*cin:(done+m)*cin], m, y[done*cout:(done+m)*cout]); err != nil {
			return err
		}
		done += m
	}
	return nil
}

func (d *Dispatcher) runSlot(s *slot, x []float32, m int, y []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := d.load(s); err != nil {
		return err
	}
	cin, cout := s.k.Inputs[0].Shape[1], s.k.Outputs[0].Shape[1]
	PackColumns(s.in, x, m, cin, s.k.Seq)
	s.ins[0], s.outs[0] = s.in, s.out
	if err := s.l.Eval(s.ins[:], s.outs[:], m); err != nil {
		return fmt.Errorf("dispatch: program %s: %w", s.k.Name, err)
	}
	UnpackColumns(y, s.out, m, cout, s.k.Seq)
	return nil
}

// Close closes every loaded program and returns the first error.
func (d *Dispatcher) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first error
	for _, g := range d.groups {
		for _, s := range g {
			s.mu.Lock()
			if s.l != nil {
				if err := s.l.Close(); err != nil && first == nil {
					first = err
				}
				s.l = nil
			}
			s.mu.Unlock()
		}
	}
	return first
}

// PackColumns writes n token-major rows of c values (x[t*c+ch]) into the channel-major fp16
// layout of a [1, c, 1, s] tensor (dst[ch*s+t]), zeroing the padding columns t >= n.
func PackColumns(dst []uint16, x []float32, n, c, s int) {
	for ch := 0; ch < c; ch++ {
		row := dst[ch*s : ch*s+s]
		for t := 0; t < n; t++ {
			row[t] = half.F32ToF16Scalar(x[t*c+ch])
		}
		clear(row[n:])
	}
}

// UnpackColumns reads the first n columns of a channel-major fp16 [1, c, 1, s] tensor into n
// token-major rows of c float32 values.
func UnpackColumns(y []float32, src []uint16, n, c, s int) {
	t16 := f16Lookup()
	for ch := 0; ch < c; ch++ {
		row := src[ch*s : ch*s+n]
		for t, h := range row {
			y[t*c+ch] = t16[h]
		}
	}
}

var (
	f16TableOnce sync.Once
	f16Table     []float32 // fp16 bits -> float32, all 65536 patterns
)

// f16Lookup returns the float32 value of every fp16 bit pattern (package half's conversion).
func f16Lookup() []float32 {
	f16TableOnce.Do(func() {
		f16Table = make([]float32, 1<<16)
		for i := range f16Table {
			f16Table[i] = half.F16ToF32Scalar(uint16(i))
		}
	})
	return f16Table
}
