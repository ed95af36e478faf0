// Package version reports what a binary is: the module version and commit it was built from,
// the Go toolchain, and the CPU features this machine gives its kernels. `anerun version`,
// `anepack version` and both commands' --version print it; a bug report starts with it.
//
// It sits on the ground floor: the caller says whether the CPU kernels run in assembly here
// (kernels.HasAsm) and which bundle versions it handles, so the report needs nothing above it.
package version

import (
	"fmt"
	"io"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/cpu"
)

// Commit is the commit the binary was built from, set by the Makefile
// (-ldflags "-X github.com/anepack/anepack/internal/version.Commit=..."); when empty, the
// commit Go recorded in the build info is used (go build records it when it may run git).
var Commit string

// Info is the report.
type Info struct {
	Tool     string // "anerun" or "anepack"
	Module   string // the module path
	Version  string // the module version: a tag when installed with go install module@version, "(devel)" for a build in the repository
	Commit   string // commit hash, "+modified" appended when the work tree had changes; "unknown" when not recorded
	Go       string // the Go toolchain, e.g. "go1.26.8"
	Platform string // GOOS/GOARCH
	// Kernels says how the CPU kernels run here: "assembly" or "go", and the CPU features they
	// can use that this CPU has.
	Kernels  string
	Features []string
	// Producer is the anepack producer version written into bundles, and Format the bundle
	// format version this binary writes and reads.
	Producer, Format string
}

// Get gathers the report for tool; producer and format are the bundle versions it handles, and
// asm says whether its CPU kernels use assembly on this machine (kernels.HasAsm).
func Get(tool, producer, format string, asm bool) Info {
	in := Info{Tool: tool, Module: "github.com/anepack/anepack", Version: "(devel)", Commit: Commit,
		Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH, Kernels: "go",
		Features: CPUFeatures(), Producer: producer, Format: format}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in.Module = bi.Main.Path
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if in.Commit == "" && rev != "" {
			in.Commit = rev
			if modified == "true" {
				in.Commit += "+modified"
			}
		}
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	if asm {
		in.Kernels = "assembly"
	}
	return in
}

// Write prints the report, one fact a line.
func (in Info) Write(w io.Writer) {
	feat := strings.Join(in.Features, " ")
	if feat == "" {
		feat = "none"
	}
	fmt.Fprintf(w, "%s %s (%s)\n", in.Tool, in.Version, in.Module)
	fmt.Fprintf(w, "commit:   %s\n", in.Commit)
	fmt.Fprintf(w, "go:       %s %s\n", in.Go, in.Platform)
	fmt.Fprintf(w, "kernels:  %s; CPU features %s\n", in.Kernels, feat)
	fmt.Fprintf(w, "bundles:  format %s, producer anepack %s\n", in.Format, in.Producer)
}

// String is the report as Write prints it.
func (in Info) String() string {
	var b strings.Builder
	in.Write(&b)
	return b.String()
}

// CPUFeatures lists the features the CPU kernels (runtime/kernels) can use that this CPU
// has: AVX2, FMA and F16C (and AVX-512 F, VL, BW, VNNI, VBMI, and AMX tiles with bfloat16) on
// amd64, Advanced SIMD on arm64. amx-bf16 says the CPU has it; whether the OS lets a process
// use it, `anerun doctor`'s kernel list says.
// Never nil.
func CPUFeatures() []string {
	f := []string{}
	add := func(has bool, name string) {
		if has {
			f = append(f, name)
		}
	}
	switch goruntime.GOARCH {
	case "amd64":
		add(cpu.X86.HasAVX2, "avx2")
		add(cpu.X86.HasFMA, "fma")
		add(cpu.X86.HasF16C, "f16c")
		add(cpu.X86.HasAVX512F, "avx512f")
		add(cpu.X86.HasAVX512VL, "avx512vl")
		add(cpu.X86.HasAVX512BW, "avx512bw")
		add(cpu.X86.HasAVX512VNNI, "avx512vnni")
		add(cpu.X86.HasAVX512VBMI, "avx512vbmi")
		add(cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16, "amx-bf16")
	case "arm64":
		add(cpu.ARM64.HasASIMD, "asimd") // NEON; the fp16 weights are widened with FCVTL (ARMv8.0)
		add(cpu.ARM64.HasASIMDDP, "asimddp")
	}
	return f
}
