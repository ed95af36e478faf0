package ane

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anepack/anepack/mil"
)

// Driver compiles, loads and runs programs through the framework. It is shared by the whole
// process (the ANE compiler's budget is per process) and safe for concurrent use: every
// framework call runs on the framework's thread, one at a time.
type Driver struct {
	fw    framework
	sleep func(time.Duration) // time.Sleep; tests make it instant

	mu     sync.Mutex
	counts Counts
	live   map[string]int // staging directory -> loaded programs using it
}

// Counts says what the driver has done in this process.
type Counts struct {
	Compiles   int // programs compiled (counted against MaxCompiles)
	CacheLoads int // programs loaded from the daemon's compile cache, without compiling
	Recoveries int // cached programs that failed to load and were compiled again
	Stale      int // staging directories whose files had changed, compiled afresh
}

// newDriver returns a driver over a framework.
func newDriver(fw framework) *Driver {
	return &Driver{fw: fw, sleep: time.Sleep, live: map[string]int{}}
}

// Counts returns what the driver has done so far.
func (d *Driver) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}

// StagingRoot is the directory holding the staging directories of the programs (the
// framework's NSTemporaryDirectory()): the compile cache `anerun doctor --clear-cache` clears.
func (d *Driver) StagingRoot() string { return d.fw.tempDir() }

// Close does nothing: the driver and its thread live as long as the process. Close each
// Program instead.
func (d *Driver) Close() error { return nil }

// Compile stages a program, compiles it (unless the daemon has it compiled already), loads
// it, and prepares its surfaces and request. It counts compiles against MaxCompiles. On
// failure nothing stays loaded or allocated; the staging directory is kept when it holds a
// compiled program.
func (d *Driver) Compile(spec Spec) (*Program, error) {
	spec, err := applyLayout(spec)
	if err != nil {
		return nil, err
	}
	if len(spec.Inputs) == 0 || len(spec.Outputs) == 0 {
		return nil, fmt.Errorf("ane: a program needs inputs and outputs; the spec has %d and %d", len(spec.Inputs), len(spec.Outputs))
	}
	for _, io := range append(append([]IO{}, spec.Inputs...), spec.Outputs...) {
		if io.Bytes <= 0 {
			return nil, fmt.Errorf("ane: %s is %d bytes", io.Name, io.Bytes)
		}
	}
	p := &Program{d: d}
	if spec.Borrow {
		p.borrowed = spec.Weights // the framework points into them until Close
	}
	for _, io := range spec.Inputs {
		p.inBytes = append(p.inBytes, io.Bytes)
	}
	for _, io := range spec.Outputs {
		p.outBytes = append(p.outBytes, io.Bytes)
	}
	if err := d.fw.run(func() error { return d.build(p, spec) }); err != nil {
		d.fw.run(func() error { p.release(); return nil })
		return nil, err
	}
	return p, nil
}

// applyLayout rewrites a spec for its constexpr expansion and its blob layout.
func applyLayout(spec Spec) (Spec, error) {
	if spec.Expand {
		text, weights, err := mil.ExpandConstexpr(spec.MIL, spec.Weights)
		if err != nil {
			return spec, fmt.Errorf("ane: expanding quantized weights: %w", err)
		}
		// The expanded file is Go memory: the framework must copy it.
		spec.MIL, spec.Weights, spec.Borrow, spec.Expand = text, weights, false, false
	}
	switch spec.Layout {
	case "", mil.LayoutPacked:
		return spec, nil
	case mil.LayoutSplit:
		text, weights, err := mil.SplitBlobs(spec.MIL, spec.Weights)
		if err != nil {
			return spec, fmt.Errorf("ane: blob layout split: %w", err)
		}
		// The new files are Go copies: the framework must copy them in turn.
		spec.MIL, spec.Weights, spec.Borrow = text, weights, false
		return spec, nil
	}
	return spec, fmt.Errorf("ane: blob layout %q; expected %s or %s", spec.Layout, mil.LayoutPacked, mil.LayoutSplit)
}

// build runs on the framework's thread: model, staging, compile or cache load, surfaces,
// request.
func (d *Driver) build(p *Program, spec Spec) error {
	m, err := d.fw.newModel(spec.MIL, spec.Weights, spec.Borrow)
	if err != nil {
		return err
	}
	p.model = m
	id := m.id()
	if id == "" || strings.ContainsAny(id, `/\.`) || id != filepath.Base(id) {
		return fmt.Errorf("ane: unexpected hexStringIdentifier %q", id)
	}
	// The compiler (in aned) reads the program from <tempDir>/<id>/ and writes the compiled
	// program there; the directory is kept after Close so that the next run loads it without
	// compiling (docs/ane.md, "The compile cache").
	p.dir = filepath.Join(d.fw.tempDir(), id)
	d.acquire(p.dir)
	changed, err := stage(p.dir, spec)
	if err != nil {
		return err
	}
	if err := d.compileAndLoad(p, spec, changed); err != nil {
		return err
	}
	return p.bind(spec)
}

// compileAndLoad loads p's model from the daemon's cache when it has it, else compiles and
// loads it. A cached program that fails to load (the cache was purged, or an OS update made
// it stale) is staged and compiled again, once; so is one whose staging directory held other
// files (the identifier did not cover the whole program).
func (d *Driver) compileAndLoad(p *Program, spec Spec, changed bool) error {
	if changed {
		d.note(func(c *Counts) { c.Stale++ })
		if err := d.restage(p, spec); err != nil {
			return err
		}
	} else if p.model.compiledExists() {
		loadErr := d.load(p.model)
		if loadErr == nil {
			p.loaded = true
			d.note(func(c *Counts) { c.CacheLoads++ })
			return nil
		}
		d.note(func(c *Counts) { c.Recoveries++ })
		if err := d.restage(p, spec); err != nil {
			return fmt.Errorf("ane: the cached program %s failed to load (%v) and could not be staged again: %w", filepath.Base(p.dir), loadErr, err)
		}
	}
	if err := d.countCompile(); err != nil {
		return err
	}
	if err := p.model.compile(); err != nil {
		if d.sole(p.dir) {
			removeStaging(p.dir) // a failed compile leaves nothing worth keeping
		}
		return err
	}
	if err := d.load(p.model); err != nil {
		return err
	}
	p.loaded = true
	return nil
}

// restage replaces p's model with a fresh one over a freshly staged directory: the old
// directory's files, compiled program included, are removed unless another loaded program
// of this process uses them.
func (d *Driver) restage(p *Program, spec Spec) error {
	p.model.release()
	p.model = nil
	if d.sole(p.dir) {
		if err := removeStaging(p.dir); err != nil {
			return err
		}
	}
	m, err := d.fw.newModel(spec.MIL, spec.Weights, spec.Borrow)
	if err != nil {
		return err
	}
	p.model = m
	if id := filepath.Join(d.fw.tempDir(), m.id()); id != p.dir {
		return fmt.Errorf("ane: the framework gave the same program a new identifier (%s, was %s)", filepath.Base(id), filepath.Base(p.dir))
	}
	_, err = stage(p.dir, spec)
	return err
}

// load loads a compiled model, retrying once after 100 ms: a load right after other programs
// were unloaded can fail transiently (docs/ane.md, "The call order").
func (d *Driver) load(m fwModel) error {
	err := m.load()
	if err == nil {
		return nil
	}
	d.sleep(100 * time.Millisecond)
	if m.load() == nil {
		return nil
	}
	return err
}

// countCompile takes one compile from the budget, or fails with ErrCompileBudget.
func (d *Driver) countCompile() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts.Compiles >= MaxCompiles {
		return ErrCompileBudget
	}
	d.counts.Compiles++
	return nil
}

func (d *Driver) note(f func(*Counts)) {
	d.mu.Lock()
	f(&d.counts)
	d.mu.Unlock()
}

// acquire and release count the programs of this process using a staging directory:
// identical programs share one (they have the same identifier).
func (d *Driver) acquire(dir string) {
	d.mu.Lock()
	d.live[dir]++
	d.mu.Unlock()
}

func (d *Driver) releaseDir(dir string) {
	d.mu.Lock()
	if d.live[dir]--; d.live[dir] <= 0 {
		delete(d.live, dir)
	}
	d.mu.Unlock()
}

// sole reports whether only one program of this process (the caller's) uses dir.
func (d *Driver) sole(dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.live[dir] <= 1
}

// Program is a compiled, loaded ANE program with its surfaces and request, ready to evaluate.
// Evaluations of one program are serialised.
type Program struct {
	d        *Driver
	mu       sync.Mutex
	model    fwModel
	loaded   bool // load succeeded: Close must unload
	request  fwRequest
	inputs   []fwSurface
	outputs  []fwSurface
	inBytes  []int // tensor bytes of each input and output (surfaces may be larger)
	outBytes []int
	dir      string
	borrowed map[string][]byte // weight bytes handed over without a copy, referenced until Close
	closed   bool
}

// surfaceMin is the smallest IOSurface the driver allocates: small surfaces are where runs on
// hardware failed or returned zeros, and the runtimes that worked padded to 48 or 64 KiB
// (docs/ane.md, "Surfaces").
const surfaceMin = 64 << 10

// surfaceSize is the size of the IOSurface for a tensor of n bytes: at least surfaceMin, or
// exactly n where the caller asks (the probe's 4 KiB test). The tensor always starts at
// offset 0 with its own row stride; only the allocation grows.
func surfaceSize(n int, exact bool) int {
	if exact {
		return n
	}
	return max(n, surfaceMin)
}

// bind creates the surfaces and the request.
func (p *Program) bind(spec Spec) error {
	fw := p.d.fw
	for _, io := range spec.Inputs {
		s, err := fw.newSurface(surfaceSize(io.Bytes, spec.ExactSurfaces))
		if err != nil {
			return err
		}
		p.inputs = append(p.inputs, s)
	}
	for _, io := range spec.Outputs {
		s, err := fw.newSurface(surfaceSize(io.Bytes, spec.ExactSurfaces))
		if err != nil {
			return err
		}
		p.outputs = append(p.outputs, s)
	}
	r, err := fw.newRequest(p.model, p.inputs, p.outputs)
	if err != nil {
		return err
	}
	p.request = r
	return nil
}

// Eval copies the inputs into their surfaces, evaluates the program synchronously and copies
// the outputs out. in[i] and out[i] must have exactly the tensor sizes given at Compile.
func (p *Program) Eval(in, out [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("ane: Eval on a closed program")
	}
	if len(in) != len(p.inputs) || len(out) != len(p.outputs) {
		return fmt.Errorf("ane: Eval with %d inputs and %d outputs; the program has %d and %d", len(in), len(out), len(p.inputs), len(p.outputs))
	}
	for i, b := range in {
		if len(b) != p.inBytes[i] {
			return fmt.Errorf("ane: input %d is %d bytes; the tensor is %d", i, len(b), p.inBytes[i])
		}
	}
	for i, b := range out {
		if len(b) != p.outBytes[i] {
			return fmt.Errorf("ane: output %d is %d bytes; the tensor is %d", i, len(b), p.outBytes[i])
		}
	}
	return p.d.fw.run(func() error {
		for i, s := range p.inputs {
			if err := s.write(in[i]); err != nil {
				return err
			}
		}
		if err := p.model.evaluate(p.request); err != nil {
			return err
		}
		for i, s := range p.outputs {
			if err := s.read(out[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close unloads the program and frees its surfaces. Its staging directory stays: it holds
// the compiled program, which the next process loads without compiling.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.d.fw.run(p.release)
}

// release frees what build made, in reverse order; it unloads only a loaded model.
func (p *Program) release() error {
	var err error
	if p.loaded {
		err = p.model.unload()
		p.loaded = false
	}
	if p.request != nil {
		p.request.release()
		p.request = nil
	}
	for _, s := range append(p.inputs, p.outputs...) {
		s.release()
	}
	p.inputs, p.outputs = nil, nil
	if p.model != nil {
		p.model.release()
		p.model = nil
	}
	p.borrowed = nil
	if p.dir != "" {
		p.d.releaseDir(p.dir)
		p.dir = ""
	}
	return err
}
