// Package ane runs a bundle's ANE programs: the ane and sim backends of anerun, and the
// darwin/arm64 driver for Apple's private AppleNeuralEngine.framework, reached with purego (no
// cgo).
//
// # Backend
//
// [New] returns a runtime.Backend: the runtime's one forward pass (runtime.Decoder) whose
// linear layers are the bundle's MIL programs, one per fused group of each layer (QKV with its
// biases, O, the whole gated MLP) and one per LM-head chunk, run through the dispatcher of
// package runtime/ane/internal/dispatch, which picks the smallest bucket for a run of tokens
// and packs token-major float32 activations into channel-major fp16 surfaces and back. Embedding, norms (the per-head q/k norms included),
// RoPE, causal attention over a float32 KV cache and the residuals are the decoder's, on the
// CPU. Only the evaluator differs between the two backends:
//
//   - EvalANE: each program is compiled and run on the Neural Engine by the driver below;
//   - EvalSim: each program's MIL text and weight blobs are executed by package mil's
//     simulator, on any machine, with fp16 rounding after every op.
//
// Programs load on first use of their bucket. The buckets a run may use are planned so that
// everything it can load fits the compile budget (MaxCompiles; the ANE compiler fails after
// about 119 compiles per process): for Qwen2.5-0.5B (24 layers x 3 groups per bucket + 5
// LM-head chunks) that is the S = 32 programs only, 77 compiles. The sim counts loads against
// the same budget, so `--backend sim` rehearses an ANE run, budget included. A run that still
// exhausts the budget fails with a BudgetError that says what to do.
//
// Decode (one token) runs on the S = 32 programs with one live column (DecodeANE), or on the
// CPU backend's projections over the same weight bytes (DecodeCPU: every single-token product
// then runs there, the logits of a one-row prefill included). Options.Check compares each
// program's first evaluation with the simulator, to find the program the hardware computes
// differently. A bundle packed with `anepack --no-ane`, or an f32 bundle, gives ErrNoPrograms.
//
// # Driver
//
// [Open] returns the process's [Driver]. It stages a program's MIL text and weight blobs,
// compiles and loads it in the aned daemon (or loads it from the daemon's compile cache, which
// survives the process), wraps inputs and outputs in IOSurfaces, and evaluates requests, all
// on one OS-thread-locked worker with an autorelease pool per call. The decisions (staging,
// cache use and recovery, unloading, surface sizes, blob layout) are portable code over a
// small framework interface, tested with a fake framework; only the Objective-C messages are
// darwin/arm64 code. On every other platform Open returns [ErrUnavailable].
//
// # Before the ANE is trusted
//
// `--backend auto` uses the ANE only after [SelfTest] has passed on this OS build (cached in
// the anepack store, [SelfTestCache]); `anerun doctor --probe` runs [ProbePrograms], on the
// ANE where there is one and in the simulator everywhere.
//
// Nothing here has run on Apple hardware yet: the driver's sequence of calls follows the
// public ANE research runtimes (docs/ane.md says which and what each guard is for) and is
// checked by cross-compilation only; the backend is tested end to end with the sim evaluator.
package ane

import (
	"errors"
	"fmt"
)

// ErrUnavailable is returned where the ANE cannot be used: another OS or CPU, or the private
// framework or its classes could not be loaded.
var ErrUnavailable = errors.New("ane: the Apple Neural Engine is not available on this machine")

// ErrCompileBudget is returned when a process has used its compile budget: the ANE compiler
// leaks resources and fails after about 119 compiles per process (docs/ane.md, "Limits").
// Programs the daemon has already compiled (from an earlier run) load without compiling, so a
// caller can restart the process and continue.
var ErrCompileBudget = errors.New("ane: compile budget of this process is used up (about 119 compiles); restart the process to continue from the daemon's compile cache")

// MaxCompiles is the number of compiles this package allows per process, below the ~119 at which
// the ANE compiler starts failing.
const MaxCompiles = 100

// NSError is an error reported by the framework, with the NSError's domain, code and description.
type NSError struct {
	Op          string // the selector that failed, e.g. "compileWithQoS:options:error:"
	Domain      string
	Code        int64
	Description string
}

// Error gives the selector, domain, code and description.
func (e *NSError) Error() string {
	return fmt.Sprintf("ane: %s failed: %s error %d: %s", e.Op, e.Domain, e.Code, e.Description)
}

// IO describes one input or output of a program: a [1, C, 1, S] tensor, channel-major, whose
// surface holds Bytes bytes (C * S * element size).
type IO struct {
	Name  string
	Bytes int
}

// Spec is what Compile needs: the MIL text, the weight blob files by the path the MIL names them
// with (e.g. "@model_path/weights/attn_qkv.bin"), and the I/O sizes in the order of the
// program's parameters and results.
type Spec struct {
	MIL     []byte
	Weights map[string][]byte
	Inputs  []IO
	Outputs []IO
	// Layout is the blob layout to hand the compiler: mil.LayoutPacked (or "") as given, or
	// mil.LayoutSplit, one record per file (mil.SplitBlobs).
	Layout string
	// Expand rewrites the program's constexpr ops (quantized weights) into dense fp16 weights
	// before compiling (mil.ExpandConstexpr): the fallback for a compiler that refuses them.
	Expand bool
	// Borrow says the weight bytes are a read-only memory mapping (not Go memory) that stays
	// mapped and unmodified until the program is closed, as a bundle's sections are: they are
	// handed to the framework without a copy. Otherwise the framework copies them.
	Borrow bool
	// ExactSurfaces allocates each IOSurface at exactly its tensor's size instead of at least
	// 64 KiB (for the probe, which tests whether small surfaces work).
	ExactSurfaces bool
}

// Report describes what `anerun doctor` shows about the ANE.
type Report struct {
	OS           string   // e.g. "darwin 25.1.0"
	OSBuild      string   // kern.osversion, e.g. "25B78": the key of the self-test cache
	Chip         string   // e.g. "Apple M4 Pro"
	Framework    bool     // AppleNeuralEngine.framework loaded
	Classes      []string // private classes that resolved
	Missing      []string // private classes that did not
	Available    bool     // everything needed resolved
	Reason       string   // why not, when not Available
	CompileCount int      // compiles used by this process
}

// Classes are the private classes the driver needs.
var Classes = []string{"_ANEInMemoryModelDescriptor", "_ANEInMemoryModel", "_ANERequest", "_ANEIOSurfaceObject"}
