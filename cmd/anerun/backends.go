package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
)

// The backends that run a bundle's ANE kernels. Both go through the same kernel dispatch
// (runtime/ane); only the evaluation differs. backend.go lists them in the order "auto" tries
// them: ane before cpu (so Apple Silicon uses the Neural Engine when the framework loads and
// the bundle has kernels), sim after cpu (auto never picks the simulator: it is for checking).
var (
	aneBackend = backendKind{"ane",
		"the bundle's ANE kernels on the Apple Neural Engine (Apple Silicon); attention and norms on the CPU",
		func(m *runtime.Model, o *modelFlags) (runtime.Backend, error) { return openKernels(m, o, ane.EvalANE) }}
	simBackend = backendKind{"sim",
		"the same ANE kernels executed by the MIL simulator (any machine; slow, for checking the ANE path)",
		func(m *runtime.Model, o *modelFlags) (runtime.Backend, error) { return openKernels(m, o, ane.EvalSim) }}
)

// kernelFlags holds the flags of the kernel backends, registered by registerKernelFlags on every
// command that runs a model. One command runs per process, so one variable serves them all.
var kernelFlags struct {
	decodeOn string
	check    bool
}

// registerKernelFlags adds --decode-on and --ane-check to a command's model flags.
func registerKernelFlags(f *pflag.FlagSet) {
	f.StringVar(&kernelFlags.decodeOn, "decode-on", ane.DecodeANE,
		"with --backend ane or sim, where decode steps run: ane (the S=32 kernels, one live column) or cpu (float32 GEMVs; needs fewer ANE compiles)")
	f.BoolVar(&kernelFlags.check, "ane-check", false,
		"with --backend ane or sim, compare each kernel's first evaluation with the MIL simulator and stop at the first that differs")
}

// openKernels opens the ane or sim backend for m.
func openKernels(m *runtime.Model, o *modelFlags, eval string) (runtime.Backend, error) {
	decodeOn := kernelFlags.decodeOn
	if decodeOn == "" {
		decodeOn = ane.DecodeANE
	}
	if decodeOn != ane.DecodeANE && decodeOn != ane.DecodeCPU {
		return nil, fmt.Errorf("--decode-on %q: expected %s or %s", decodeOn, ane.DecodeANE, ane.DecodeCPU)
	}
	return ane.New(m, ane.Options{Eval: eval, DecodeOn: decodeOn, Threads: o.threads, Check: kernelFlags.check})
}

// autoChoice says which backend `--backend auto` picks on this machine for a bundle with ANE
// kernels (hasKernels) or without, and why; doctor prints it. It follows the order of the
// backends list: ane where the driver opens, else cpu.
func autoChoice(r ane.Report, hasKernels bool) (string, string) {
	switch {
	case !r.Available:
		return "cpu", "the ANE is not available: " + r.Reason
	case !hasKernels:
		return "cpu", "the bundle has no ANE kernels (packed with --no-ane)"
	}
	return "ane", "AppleNeuralEngine.framework and its classes resolve"
}
