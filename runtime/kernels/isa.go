package kernels

import (
	"fmt"
	"slices"
	"strings"
)

// ISALevels lists the instruction-set levels LimitISA takes on this build, best first. Each
// level's kernels need the levels below it, and "go" (the pure-Go twins) is always last:
//   - amd64: "amx" (the AMX tile prefill), "avx512" (AVX-512 matrix kernels, VNNI int8),
//     "avx2" (AVX2, FMA and F16C), "go";
//   - arm64: "dotprod" (the SDOT int8 kernels), "neon", "go";
//   - other architectures, and -tags noasm: "go".
func ISALevels() []string { return slices.Clone(isaNames) }

// LimitISA caps the kernels at an instruction-set level of ISALevels: those of the level and
// below it stay as the CPU allows, those above are not used. It lets one machine run what a
// smaller CPU of its kind would (an AVX-512 machine measured as an AVX2-only one), and steps
// around a kernel a user distrusts, as oneDNN's ONEDNN_MAX_CPU_ISA does. A level above what the
// CPU has changes nothing. Call it before any kernel runs; it is not safe while kernels run.
func LimitISA(level string) error {
	if !slices.Contains(isaNames, level) {
		return fmt.Errorf("instruction-set level %q is not one of this build's (%s)", level, strings.Join(isaNames, ", "))
	}
	capISA(level)
	return nil
}
