//go:build !noasm

package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAVX2Level runs the matrix kernel tests again on the AVX2 kernels when
// the machine would otherwise pick the AVX-512 ones, so that both levels are
// tested on an AVX-512 machine (the Go twins are tested on their own in each
// test).
func TestAVX2Level(t *testing.T) {
	if !useAVX512 {
		t.Skip("the default run already uses the AVX2 kernels (no AVX-512 here)")
	}
	useAVX512 = false
	defer func() { useAVX512 = true }()
	t.Run("MatVec", TestMatVec)
	t.Run("MatMul", TestMatMul)
	t.Run("MatMulBlocks", TestMatMulBlocks)
	t.Run("OneTokenIsMatVec", TestMatMulOneTokenIsMatVec)
}

// isaLevel is one instruction-set level of the matrix kernels; set switches
// to it and returns a func that switches back.
type isaLevel struct {
	name string
	set  func() (restore func())
}

// isaLevels lists the levels this machine can run, best first.
func isaLevels() []isaLevel {
	saved2, saved512, savedVNNI, savedBW, savedAMX := useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX
	restore := func() {
		useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX = saved2, saved512, savedVNNI, savedBW, savedAMX
	}
	var l []isaLevel
	if saved512 {
		l = append(l, isaLevel{"avx512", func() func() { return restore }})
	}
	if saved2 {
		l = append(l, isaLevel{"avx2", func() func() { useAVX512, useAVX512BW, useAMX = false, false, false; return restore }})
	}
	return append(l, isaLevel{"go", func() func() {
		useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX = false, false, false, false, false
		return restore
	}})
}

// TestVEXKernelsUseLowRegisters checks the generated assembly: only the
// AVX-512 kernels may name vector registers 16-31, which need EVEX encodings
// (an AVX2 kernel given one by the register allocator would assemble to an
// AVX-512 instruction and fault on an AVX2-only CPU).
func TestVEXKernelsUseLowRegisters(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	high := regexp.MustCompile(`\b[XYZ](1[6-9]|2[0-9]|3[01])\b`)
	evex := regexp.MustCompile(`^·(gemmF(16|32)ZT|gemmQ[48]ZT|gemmNNZ|matVecF(16|32)AVX512|q[48]VNNI)`)
	fn := ""
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = strings.Fields(line)[1]
			continue
		}
		if high.MatchString(line) && !evex.MatchString(fn) {
			t.Errorf("%s uses a register only EVEX can encode: %s", fn, strings.TrimSpace(line))
		}
	}
}
