package main

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"

	"github.com/spf13/pflag"

	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
)

// The backends that run a bundle's ANE programs. Both go through the same program dispatch
// (runtime/ane); only the evaluation differs. backend.go lists them in the order "auto" tries
// them: ane before cpu (so Apple Silicon uses the Neural Engine when the framework loads and
// the bundle has programs), sim after cpu (auto never picks the simulator: it is for checking).
var (
	aneBackend = backendKind{"ane",
		"the bundle's ANE programs on the Apple Neural Engine (Apple Silicon); attention and norms on the CPU",
		openANE}
	simBackend = backendKind{"sim",
		"the same ANE programs executed by the MIL simulator (any machine; slow, for checking the ANE path)",
		func(m *runtime.Model, o *modelFlags) (runtime.Backend, error) {
			return openProgramBackend(m, o, ane.EvalSim, false)
		}}
)

// aneFlags holds the flags of the ane and sim backends, registered by registerANEFlags on every
// command that runs a model. One command runs per process, so one variable serves them all.
var aneFlags struct {
	decodeOn   string
	check      bool
	blobLayout string
	constexpr  string
}

// registerANEFlags adds --decode-on and --ane-check to a command's model flags.
func registerANEFlags(f *pflag.FlagSet) {
	f.StringVar(&aneFlags.decodeOn, "decode-on", ane.DecodeANE,
		"with --backend ane or sim, where decode steps run: ane (the S=32 programs, one live column) or cpu (float32 GEMVs; needs fewer ANE compiles)")
	f.BoolVar(&aneFlags.check, "ane-check", false,
		"with --backend ane or sim, compare each program's first evaluation with the MIL simulator and stop at the first that differs; report each program's fp16 headroom")
	f.StringVar(&aneFlags.blobLayout, "ane-blob-layout", "auto",
		"with --backend ane or sim, how weight files reach the compiler: packed (the bundle's files), split (one tensor per file, which M1 is reported to need) or auto (what this machine's self-test found; packed elsewhere)")
	f.StringVar(&aneFlags.constexpr, "ane-constexpr", "auto",
		"with --backend ane or sim and an int8/int4 bundle, how quantized weights reach the compiler: native (MIL constexpr ops), expand (to fp16 at compile time) or auto (what anerun doctor --probe found on this machine; expand on the ANE until then, native in the simulator)")
}

// constexprMode resolves --ane-constexpr for an evaluator: auto is the probe's finding on this
// OS build; on the ANE without one, expand (dense fp16 always compiles; the constexpr ops have
// no report of compiling in memory yet), in the simulator native.
func constexprMode(eval string) (string, error) {
	switch c := aneFlags.constexpr; c {
	case ane.ConstexprNative, ane.ConstexprExpand:
		return c, nil
	case "auto", "":
	default:
		return "", fmt.Errorf("--ane-constexpr %q: expected auto, %s or %s", c, ane.ConstexprNative, ane.ConstexprExpand)
	}
	if eval != ane.EvalANE {
		return ane.ConstexprNative, nil
	}
	if cache, err := selfTestCache(); err == nil {
		p := ane.Probe()
		key := p.OSBuild
		if key == "" {
			key = p.OS
		}
		if rec, ok, _ := cache.Lookup(key, p.Chip); ok && rec.Constexpr != "" {
			return rec.Constexpr, nil
		}
	}
	return ane.ConstexprExpand, nil
}

// openANE opens the ane backend. Under --backend auto it first requires the ANE self-test to
// have passed on this OS build (running it, in a child process, the first time), and compiles
// (or loads from the compile cache) every planned program before the run starts, so that a
// program the ANE refuses also sends auto on to the CPU; on Apple Silicon auto says why in one
// line when it does.
func openANE(m *runtime.Model, o *modelFlags) (runtime.Backend, error) {
	if o.backend != "auto" || len(m.Manifest().Programs) == 0 {
		return openProgramBackend(m, o, ane.EvalANE, false)
	}
	onApple := goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64"
	c := autoANE()
	if !c.UseANE {
		if onApple {
			fmt.Fprintln(os.Stderr, "anerun: using the CPU: "+c.Reason)
		}
		return nil, errors.New(c.Reason)
	}
	b, err := openProgramBackend(m, o, ane.EvalANE, true)
	if err != nil && onApple {
		fmt.Fprintln(os.Stderr, "anerun: using the CPU: the ANE self-test passed but the bundle's programs did not load: "+err.Error())
	}
	return b, err
}

// blobLayout resolves --ane-blob-layout for an evaluator: auto is the layout the ANE
// self-test (or the probe) recorded for this OS build, packed where there is none and in the
// simulator.
func blobLayout(eval string) (string, error) {
	switch l := aneFlags.blobLayout; l {
	case mil.LayoutPacked, mil.LayoutSplit:
		return l, nil
	case "auto", "":
	default:
		return "", fmt.Errorf("--ane-blob-layout %q: expected auto, %s or %s", l, mil.LayoutPacked, mil.LayoutSplit)
	}
	if eval != ane.EvalANE {
		return mil.LayoutPacked, nil
	}
	if cache, err := selfTestCache(); err == nil {
		p := ane.Probe()
		key := p.OSBuild
		if key == "" {
			key = p.OS
		}
		if rec, ok, _ := cache.Lookup(key, p.Chip); ok && rec.BlobLayout != "" {
			return rec.BlobLayout, nil
		}
	}
	return mil.LayoutPacked, nil
}

// openProgramBackend opens the ane or sim backend for m; preload loads every planned program now.
func openProgramBackend(m *runtime.Model, o *modelFlags, eval string, preload bool) (runtime.Backend, error) {
	decodeOn := aneFlags.decodeOn
	if decodeOn == "" {
		decodeOn = ane.DecodeANE
	}
	if decodeOn != ane.DecodeANE && decodeOn != ane.DecodeCPU {
		return nil, fmt.Errorf("--decode-on %q: expected %s or %s", decodeOn, ane.DecodeANE, ane.DecodeCPU)
	}
	layout, err := blobLayout(eval)
	if err != nil {
		return nil, err
	}
	constexpr, err := constexprMode(eval)
	if err != nil {
		return nil, err
	}
	return ane.New(m, ane.Options{Eval: eval, DecodeOn: decodeOn, Threads: o.threads, Cache: o.cacheType, Check: aneFlags.check,
		BlobLayout: layout, Constexpr: constexpr, Preload: preload})
}

// autoChoice says which backend `--backend auto` picks on this machine for a bundle with ANE
// programs (hasPrograms) or without, given this OS build's self-test record (nil: not run yet),
// and why; doctor prints it. It follows the order of the backends list: ane where the driver
// opens and the self-test passed, else cpu.
func autoChoice(r ane.Report, hasPrograms bool, selfTest *ane.SelfTestRecord) (string, string) {
	switch {
	case !r.Available:
		return "cpu", "the ANE is not available: " + r.Reason
	case !hasPrograms:
		return "cpu", "the bundle has no ANE programs (packed with --no-ane)"
	case selfTest == nil:
		return "ane", "if the ANE self-test passes: the first --backend auto run on this OS build runs it"
	case !selfTest.Passed:
		return "cpu", "the ANE self-test failed on this OS build: " + selfTest.Reason
	}
	return "ane", "the ANE self-test passed on this OS build"
}
