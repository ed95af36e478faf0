package backend

import (
	"fmt"
	"strings"

	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/cpu"
)

// The backends, and "auto" (Options.Backend).
const (
	// Auto is ANE where it can run the bundle (see the package doc), else CPU, else Sim.
	Auto = "auto"
	// ANE runs the bundle's programs on the Apple Neural Engine (Apple Silicon); attention and
	// norms run on the CPU.
	ANE = "ane"
	// CPU runs the whole forward pass on the CPU, one thread per core.
	CPU = "cpu"
	// Sim runs the same ANE programs in the MIL simulator (any machine; slow, for checking
	// the ANE path). Auto never picks it while the CPU opens.
	Sim = "sim"
)

// Names lists the values Options.Backend takes: Auto, then the backends in the order auto
// tries them.
func Names() []string { return []string{Auto, ANE, CPU, Sim} }

// Options say which backend Open opens and how.
type Options struct {
	// Backend is Auto (or ""), ANE, CPU or Sim.
	Backend string
	// Threads is the number of cores the backend uses; 0 means all of them.
	Threads int
	// Cache is the KV cache's element type.
	Cache runtime.CacheType
	// AMX says where the CPU backend's fp16 and q8 prefill products run on a CPU with
	// AMX-BF16 (cpu.Options.AMX).
	AMX cpu.AMXMode

	// The options of ANE and Sim; the CPU backend ignores them.

	// DecodeOn is where decode steps run: ane.DecodeANE (or "") or ane.DecodeCPU.
	DecodeOn string
	// Check compares each program's first evaluation with the simulator and records each
	// program's fp16 headroom (ane.Options.Check).
	Check bool
	// BlobLayout is how weight files reach the compiler: mil.LayoutPacked, mil.LayoutSplit,
	// or Auto (or ""): on the ANE the layout this OS build's self-test recorded, packed where
	// it recorded none; packed in the simulator.
	BlobLayout string
	// Constexpr is how an int8 or int4 bundle's weights reach the compiler:
	// ane.ConstexprNative, ane.ConstexprExpand, or Auto (or ""): on the ANE what `anerun
	// doctor --probe` recorded for this OS build, expand until it has run (dense fp16 always
	// compiles); native in the simulator.
	Constexpr string

	// SelfTests is where the self-test records are kept; the zero value is the file in the
	// anepack store directory ([SelfTests]).
	SelfTests ane.SelfTestCache
	// SelfTest runs the ANE self-test when Auto finds no record of it for this OS build (Open
	// then records its outcome): ChildSelfTest for a program that offers WriteSelfTest as a
	// command, RunSelfTest to run it in this process. Nil runs none: Auto then uses the ANE
	// only where a record says the self-test passed.
	SelfTest func() ane.SelfTestRecord
}

// OptionError is an Options field holding a value it does not take.
type OptionError struct {
	Field    string // the Options field: "Backend", "DecodeOn", "BlobLayout", "Constexpr"
	Value    string
	Expected []string // the values it takes
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("backend: Options.%s %q: expected one of %s", e.Field, e.Value, strings.Join(e.Expected, ", "))
}

// check returns an *OptionError for the first field holding a value it does not take.
func (o *Options) check() error {
	fields := []struct {
		name, value string
		values      []string
	}{
		{"Backend", o.Backend, Names()},
		{"DecodeOn", o.DecodeOn, []string{ane.DecodeANE, ane.DecodeCPU}},
		{"BlobLayout", o.BlobLayout, []string{Auto, mil.LayoutPacked, mil.LayoutSplit}},
		{"Constexpr", o.Constexpr, []string{Auto, ane.ConstexprNative, ane.ConstexprExpand}},
	}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		ok := false
		for _, v := range f.values {
			ok = ok || v == f.value
		}
		if !ok {
			return &OptionError{Field: f.name, Value: f.value, Expected: f.values}
		}
	}
	return nil
}
