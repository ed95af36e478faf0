package kernels

import (
	"slices"
	"strings"
	"testing"
)

// isaLevel is one instruction-set level of the kernels; set switches to it and returns a func
// that switches back.
type isaLevel struct {
	name string
	set  func() (restore func())
}

// isaLevels lists the levels this machine can run, best first: ISA and those below it, each
// set through LimitISA.
func isaLevels() []isaLevel {
	names := ISALevels()
	var l []isaLevel
	for _, name := range names[slices.Index(names, ISA()):] {
		l = append(l, isaLevel{name, func() func() {
			restore := saveISA()
			if err := LimitISA(name); err != nil {
				panic(err) // a name of ISALevels
			}
			return restore
		}})
	}
	return l
}

// TestLimitISA: every level this machine runs can be chosen, after which ISA says so (and
// Kernels: TestKernels) and the matrix kernel tests pass on that level's kernels (so an AVX-512 machine tests the
// AVX2 kernels too); a name that is not a level is
// refused with the list of those that are; "go" is last everywhere.
func TestLimitISA(t *testing.T) {
	names := ISALevels()
	if names[len(names)-1] != "go" || !slices.Contains(names, ISA()) {
		t.Fatalf("ISALevels %v, ISA %q", names, ISA())
	}
	for _, level := range isaLevels() {
		restore := level.set()
		if got := ISA(); got != level.name {
			t.Errorf("after LimitISA(%q), ISA() = %q", level.name, got)
		}
		if level.name == "go" && HasAsm() {
			t.Error("LimitISA(go): HasAsm() is still true")
		}
		t.Run(level.name+"/MatVec", TestMatVec)
		t.Run(level.name+"/MatMul", TestMatMul)
		t.Run(level.name+"/MatMulBlocks", TestMatMulBlocks)
		t.Run(level.name+"/OneTokenIsMatVec", TestMatMulOneTokenIsMatVec)
		restore()
	}
	err := LimitISA("avx9")
	if err == nil || !strings.Contains(err.Error(), `"avx9"`) || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
		t.Errorf("LimitISA(avx9): %v", err)
	}
}
