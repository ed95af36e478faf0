package ane

import (
	"errors"
	"fmt"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/kernels"
)

// Where decode steps (Forward of one token) run.
const (
	// DecodeANE runs decode through the S = 32 programs with one live column (docs/ane.md, "Inputs and outputs":
	// narrower surfaces give zeros or garbage).
	DecodeANE = "ane"
	// DecodeCPU runs decode's projections as float32 GEMVs on the CPU over the same weights;
	// prefill still runs on the programs. It needs no decode-only compiles.
	DecodeCPU = "cpu"
)

// Where a Gated DeltaNet layer's input projections (the linear_attn_in group: in_proj_qkv,
// in_proj_z, in_proj_b, in_proj_a) run.
const (
	// LinearInCPU runs them as float32 products on the CPU. The DeltaNet's gated output norm
	// rescales each head's output to unit size, and that output is a sum with heavy
	// cancellation (on the Qwen3.5 golden model its RMS is 1e-3 to 2e-2 of its terms'), so
	// the fp16 rounding of these projections' outputs reaches the logits about 100 times
	// larger: 0.19 on the golden against 0.016 with them on the CPU (the other projections
	// stay on the programs). It is the default.
	LinearInCPU = "cpu"
	// LinearInANE runs them on the bundle's linear_attn_in programs, like every other
	// projection: fewer CPU products, fp16 precision.
	LinearInANE = "ane"
)

// Options configures a Backend.
type Options struct {
	// Eval is the evaluator: EvalSim (default) or EvalANE.
	Eval string
	// Cache is the KV cache's element type (runtime.CacheF32, the zero value, or CacheF16);
	// attention runs on the CPU.
	Cache runtime.CacheType
	// DecodeOn is where decode steps run: DecodeANE (default) or DecodeCPU.
	DecodeOn string
	// Threads is the number of cores for the CPU's share (attention, norms, CPU decode); 0
	// means all of them.
	Threads int
	// CompileBudget bounds the programs one Backend loads: the buckets are planned to fit it.
	// 0 means MaxCompiles, what the ANE compiler allows a process; negative means no limit
	// (the sim then uses every bucket the bundle has).
	CompileBudget int
	// Preload loads (on the ANE: compiles) every planned program in New instead of on first use.
	Preload bool
	// Check also evaluates each program's first evaluation in the simulator and fails, naming the
	// program, where the evaluator's output differs by more than 1 % of its magnitude: for
	// bringing the ANE path up on hardware it has not run on. It costs one sim load and
	// evaluation per program. It also records each program's fp16 headroom (Headroom).
	Check bool
	// BlobLayout is how weight files reach the compiler: mil.LayoutPacked (or "": the
	// bundle's own files) or mil.LayoutSplit (one record per file, docs/ane.md).
	BlobLayout string
	// LinearInOn is where the Gated DeltaNet's input projections run: LinearInCPU (default)
	// or LinearInANE. Models without DeltaNet layers ignore it.
	LinearInOn string
	// Constexpr is how quantized weights reach the compiler: ConstexprNative (or "": through
	// the MIL constexpr ops, as the bundle stores them) or ConstexprExpand (expanded to dense
	// fp16 at compile time, mil.ExpandConstexpr: for a compiler that refuses the ops in memory).
	Constexpr string
}

// How quantized weights reach the ANE compiler (Options.Constexpr).
const (
	ConstexprNative = "native"
	ConstexprExpand = "expand"
)

// Backend runs a bundle's ANE programs for the projections of prefill (and decode), with the
// rest of the runtime's one forward pass (embedding, norms, RoPE, attention, residuals) on the
// CPU. It implements runtime.Backend. The evaluator (ANE or sim) sits behind dispatch.Dispatcher;
// nothing else depends on it.
type Backend struct {
	*runtime.Decoder
	name      string
	opts      Options
	m         *runtime.Model
	ps        *programSet
	layerSeqs []int
	lmSeqs    []int
	planned   int
	counter   *countingBackend
	disp      *dispatch.Dispatcher
	proj      *projections
	pool      *kernels.Pool
}

// New prepares the backend for m. It checks the bundle's programs (a bundle packed with
// --no-ane, or an f32 bundle, gives ErrNoPrograms with the command to pack it again), opens the
// evaluator (EvalANE off Apple Silicon gives ErrUnavailable), and plans the buckets it may use
// within the compile budget. Programs load lazily, on first use of a bucket, unless
// Options.Preload is set.
func New(m *runtime.Model, opts Options) (*Backend, error) {
	if opts.Eval == "" {
		opts.Eval = EvalSim
	}
	if opts.DecodeOn == "" {
		opts.DecodeOn = DecodeANE
	}
	if opts.LinearInOn == "" {
		opts.LinearInOn = LinearInCPU
	}
	switch {
	case opts.Eval != EvalSim && opts.Eval != EvalANE:
		return nil, fmt.Errorf("ane: evaluator %q; expected %q or %q", opts.Eval, EvalANE, EvalSim)
	case opts.DecodeOn != DecodeANE && opts.DecodeOn != DecodeCPU:
		return nil, fmt.Errorf("decode on %q; expected %q or %q", opts.DecodeOn, DecodeANE, DecodeCPU)
	case opts.LinearInOn != LinearInANE && opts.LinearInOn != LinearInCPU:
		return nil, fmt.Errorf("linear-attention input projections on %q; expected %q or %q", opts.LinearInOn, LinearInCPU, LinearInANE)
	case opts.Threads < 0:
		return nil, fmt.Errorf("threads is %d; expected 0 (all cores) or a positive number", opts.Threads)
	case opts.BlobLayout != "" && opts.BlobLayout != mil.LayoutPacked && opts.BlobLayout != mil.LayoutSplit:
		return nil, fmt.Errorf("blob layout %q; expected %q or %q", opts.BlobLayout, mil.LayoutPacked, mil.LayoutSplit)
	case opts.Constexpr != "" && opts.Constexpr != ConstexprNative && opts.Constexpr != ConstexprExpand:
		return nil, fmt.Errorf("constexpr %q; expected %q or %q", opts.Constexpr, ConstexprNative, ConstexprExpand)
	}
	ps, err := readPrograms(m)
	if err != nil {
		return nil, err
	}
	budget := opts.CompileBudget
	if budget == 0 {
		budget = MaxCompiles
	}
	var eval dispatch.Backend
	switch opts.Eval {
	case EvalSim:
		eval = &simBackend{sim: dispatch.SimBackend{Cache: mil.NewWeightCache(), TrackRange: opts.Check}, budget: budget, layout: opts.BlobLayout, expand: opts.Constexpr == ConstexprExpand}
	case EvalANE:
		d, err := Open()
		if err != nil {
			return nil, fmt.Errorf("%w (`anerun doctor` reports the machine); the same programs run in the simulator with --backend sim", err)
		}
		eval = &driverBackend{d: d, layout: opts.BlobLayout, expand: opts.Constexpr == ConstexprExpand}
	}
	if opts.Check {
		// No weight cache: each program's float32 weights are freed once it has been checked.
		eval = &checkedBackend{eval: eval, ref: &dispatch.SimBackend{TrackRange: true}}
	}
	c := m.Config
	if opts.LinearInOn == LinearInCPU {
		ps.onCPU[arch.GroupLinearIn] = true
	}
	b := &Backend{name: opts.Eval, opts: opts, m: m, ps: ps, counter: &countingBackend{Backend: eval}}
	b.layerSeqs, b.lmSeqs = ps.plan(budget, opts.DecodeOn == DecodeANE)
	b.planned = ps.compiles(b.layerSeqs, b.lmSeqs)
	b.disp, err = dispatch.NewDispatcher(b.counter, ps.selected(b.layerSeqs, b.lmSeqs), func(section string) ([]byte, error) {
		if text, ok := ps.texts[section]; ok {
			return text, nil // read once by readPrograms
		}
		s, ok := m.Bundle().Section(section)
		if !ok {
			return nil, fmt.Errorf("%s: section %q is not in the bundle", m.Name, section)
		}
		return m.Bundle().Bytes(s)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	b.pool = kernels.NewPool(opts.Threads)
	proj := &projections{d: b.disp, lmRows: ps.lmRows, lmLayer: ps.lmLayer, vocab: c.VocabSize, decodeOnCPU: opts.DecodeOn == DecodeCPU}
	for _, g := range m.Family.Groups(c) {
		proj.groups = append(proj.groups, g.Name)
		proj.onCPU = append(proj.onCPU, ps.onCPU[g.Name])
		proj.anyOnCPU = proj.anyOnCPU || ps.onCPU[g.Name]
	}
	b.proj = proj
	if proj.decodeOnCPU || proj.anyOnCPU {
		if proj.cpu, err = cpu.NewProjections(m, b.pool); err != nil {
			b.Close()
			return nil, err
		}
	}
	// A pass is the largest planned bucket: a prompt of that many tokens is one evaluation of
	// each program.
	b.Decoder, err = runtime.NewDecoder(m, proj, runtime.DecoderOptions{Name: opts.Eval, Pool: b.pool,
		Batch: slices.Max(b.layerSeqs), Cache: opts.Cache, WrapError: b.wrap})
	if err != nil {
		b.Close()
		return nil, err
	}
	if opts.Preload {
		if err := b.disp.LoadAll(); err != nil {
			b.Close()
			return nil, b.wrap(err)
		}
	}
	return b, nil
}

// Threads returns the number of cores the CPU's share uses.
func (b *Backend) Threads() int { return b.pool.Threads() }

// Stats describes the backend's programs, for `anerun --verbose`, bench and doctor.
type Stats struct {
	Eval           string // "ane" or "sim"
	DecodeOn       string // "ane" or "cpu"
	BundlePrograms int    // programs in the bundle
	Buckets        []int  // the layer buckets this backend may use
	LMHeadBuckets  []int  // the LM-head buckets it may use
	Planned        int    // programs of those buckets: the most it loads (compiles on the ANE)
	Loaded         int    // programs loaded so far
	Budget         int    // the compile budget the plan fits (< 0: none)
}

// Stats returns the backend's program counts.
func (b *Backend) Stats() Stats {
	budget := b.opts.CompileBudget
	if budget == 0 {
		budget = MaxCompiles
	}
	return Stats{Eval: b.name, DecodeOn: b.opts.DecodeOn, BundlePrograms: len(b.ps.programs),
		Buckets: slices.Clone(b.layerSeqs), LMHeadBuckets: slices.Clone(b.lmSeqs),
		Planned: b.planned, Loaded: b.counter.count(), Budget: budget}
}

// Close unloads every loaded program and stops the worker goroutines.
func (b *Backend) Close() error {
	var err error
	if b.disp != nil {
		err = b.disp.Close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
	return err
}

// BudgetError reports that the compile budget ran out while programs were loading lazily.
// It wraps ErrCompileBudget.
type BudgetError struct {
	Backend string // "ane" or "sim"
	Loaded  int    // programs loaded before the failure
	Planned int    // programs the planned buckets need
	Buckets []int
	Err     error
}

// Error says what ran out and what to do.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: %v\nThis run loaded %d of the %d programs of buckets %v before the budget ran out. "+
		"Run the command again: the aned daemon keeps the programs compiled so far and loads them without compiling. "+
		"To need fewer compiles, decode on the CPU (--decode-on cpu), or run on the CPU (--backend cpu).",
		e.Backend, e.Err, e.Loaded, e.Planned, e.Buckets)
}

// Unwrap returns ErrCompileBudget (wrapped with the program's name).
func (e *BudgetError) Unwrap() error { return e.Err }

// wrap names the backend in an error and adds advice to a compile-budget failure.
func (b *Backend) wrap(err error) error {
	if errors.Is(err, ErrCompileBudget) {
		return &BudgetError{Backend: b.name, Loaded: b.counter.count(), Planned: b.planned, Buckets: b.layerSeqs, Err: err}
	}
	return fmt.Errorf("%s: %w", b.name, err)
}
