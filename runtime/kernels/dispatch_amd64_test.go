//go:build !noasm

package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// saveISA records the kernel switches LimitISA turns off and returns a func that restores them.
func saveISA() (restore func()) {
	saved2, saved512, savedVNNI, savedBW, savedAMX := useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX
	return func() {
		useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX = saved2, saved512, savedVNNI, savedBW, savedAMX
	}
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
