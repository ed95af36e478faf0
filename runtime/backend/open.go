package backend

import (
	"errors"
	"fmt"
	goruntime "runtime"

	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/cpu"
)

// Choice is the backend Open opened and why.
type Choice struct {
	// Name is the backend: ANE, CPU or Sim.
	Name string
	// Reason says in one line why Auto took it; it is empty for a backend named in Options.
	Reason string
	// Notice, when set, is the one line a program should show its user unasked: on Apple
	// Silicon, why Auto ran on the CPU rather than the Neural Engine the user expects.
	Notice string
}

// Open opens m on the backend o names, or under Auto on the first of ANE, CPU and Sim that
// opens (see the package doc). A named backend that cannot run m returns its error; under Auto
// the error lists why each failed. An option holding a value it does not take is an
// *OptionError, whichever backend runs.
func Open(m *runtime.Model, o Options) (runtime.Backend, Choice, error) {
	if err := o.check(); err != nil {
		return nil, Choice{}, err
	}
	if o.SelfTests.Path == "" {
		o.SelfTests, _ = SelfTests("") // no store directory: nothing is recorded, and auto says so
	}
	switch o.Backend {
	case ANE:
		return named(ANE)(o.openPrograms(m, ane.EvalANE, false))
	case CPU:
		return named(CPU)(o.openCPU(m))
	case Sim:
		return named(Sim)(o.openPrograms(m, ane.EvalSim, false))
	}
	b, reason, aneErr := o.autoANE(m)
	if aneErr == nil {
		return b, Choice{Name: ANE, Reason: reason}, nil
	}
	c := Choice{Name: CPU, Reason: aneErr.Error()}
	if onApple() && !errors.Is(aneErr, ane.ErrNoPrograms) {
		c.Notice = "using the CPU: " + c.Reason
	}
	b, cpuErr := o.openCPU(m)
	if cpuErr == nil {
		return b, c, nil
	}
	b, simErr := o.openPrograms(m, ane.EvalSim, false)
	if simErr == nil {
		return b, Choice{Name: Sim, Reason: "the CPU backend cannot run this model: " + cpuErr.Error()}, nil
	}
	return nil, Choice{}, fmt.Errorf("no backend can run this model: %s: %v; %s: %v; %s: %v", ANE, aneErr, CPU, cpuErr, Sim, simErr)
}

// named returns the result of opening a backend o named: its error says which backend failed.
func named(name string) func(runtime.Backend, error) (runtime.Backend, Choice, error) {
	return func(b runtime.Backend, err error) (runtime.Backend, Choice, error) {
		if err != nil {
			return nil, Choice{}, fmt.Errorf("backend %s: %w", name, err)
		}
		return b, Choice{Name: name}, nil
	}
}

// onApple reports whether this is Apple Silicon, where a user expects the Neural Engine.
func onApple() bool { return goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64" }

func (o *Options) openCPU(m *runtime.Model) (runtime.Backend, error) {
	return cpu.New(m, cpu.Options{Threads: o.Threads, AMX: o.AMX, Cache: o.Cache})
}

// autoANE opens the ANE backend for Auto, and returns why: only where the self-test has passed
// on this OS build (ane.DecideAuto, running it the first time when o.SelfTest is set), and with
// every planned program compiled (or loaded from the compile cache) before the run starts, so
// that a program the ANE refuses also sends auto on to the CPU. A bundle without programs gives
// ane.ErrNoPrograms.
func (o *Options) autoANE(m *runtime.Model) (runtime.Backend, string, error) {
	if len(m.Manifest().Programs) == 0 {
		return nil, "", ane.ErrNoPrograms
	}
	c := ane.DecideAuto(ane.Probe(), o.SelfTests, o.SelfTest)
	if !c.UseANE {
		return nil, "", errors.New(c.Reason)
	}
	b, err := o.openPrograms(m, ane.EvalANE, true)
	if err != nil {
		return nil, "", fmt.Errorf("the ANE self-test passed but the bundle's programs did not load: %w", err)
	}
	return b, c.Reason, nil
}

// openPrograms opens the ANE backend with evaluator eval; preload loads every planned program
// now.
func (o *Options) openPrograms(m *runtime.Model, eval string, preload bool) (runtime.Backend, error) {
	return ane.New(m, ane.Options{Eval: eval, DecodeOn: o.DecodeOn, Threads: o.Threads, Cache: o.Cache, Check: o.Check,
		BlobLayout: o.blobLayout(eval), Constexpr: o.constexpr(eval), Preload: preload})
}

// blobLayout resolves o.BlobLayout for an evaluator: Auto is the layout the self-test (or the
// probe) recorded for this OS build, packed where there is none and in the simulator.
func (o *Options) blobLayout(eval string) string {
	if o.BlobLayout != "" && o.BlobLayout != Auto {
		return o.BlobLayout
	}
	if eval == ane.EvalANE {
		if rec, ok, _ := o.SelfTests.LookupHost(ane.Probe()); ok && rec.BlobLayout != "" {
			return rec.BlobLayout
		}
	}
	return mil.LayoutPacked
}

// constexpr resolves o.Constexpr for an evaluator: Auto is the probe's finding on this OS
// build; on the ANE without one, expand (dense fp16 always compiles; the constexpr ops have no
// report of compiling in memory yet), in the simulator native.
func (o *Options) constexpr(eval string) string {
	if o.Constexpr != "" && o.Constexpr != Auto {
		return o.Constexpr
	}
	if eval != ane.EvalANE {
		return ane.ConstexprNative
	}
	if rec, ok, _ := o.SelfTests.LookupHost(ane.Probe()); ok && rec.Constexpr != "" {
		return rec.Constexpr
	}
	return ane.ConstexprExpand
}
