//go:build !noasm

package half

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/asmgen . -pkg half -out ../../half_amd64.s -stubs ../../stubs_amd64.go

// useAVX2 is true when the CPU (and OS) can run half_amd64.s: AVX2 for the
// integer work, F16C for VCVTPH2PS/VCVTPS2PH and POPCNT for the loss counts.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C && cpu.X86.HasPOPCNT

// HasAsm reports whether the bulk conversions use assembly on this machine.
func HasAsm() bool { return useAVX2 }

// The fast paths convert the longest prefix the assembly handles (whole
// blocks) and return its length; the caller converts the rest in Go.

func bf16ToF16Fast(dst, src []uint16, st *Stats) int {
	n := len(src) &^ 15
	if !useAVX2 || n == 0 {
		return 0
	}
	var c [5]int
	bf16ToF16AVX2(dst[:n], src[:n], &c)
	st.Overflow += c[0]
	st.Underflow += c[1]
	st.Subnormal += c[2]
	st.Inexact += c[3]
	st.NaN += c[4]
	return n
}

func bf16ToF32Fast(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	bf16ToF32AVX2(dst[:n], src[:n])
	return n
}

func f16ToF32Fast(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	f16ToF32AVX2(dst[:n], src[:n])
	return n
}

func f32ToF16Fast(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	f32ToF16AVX2(dst[:n], src[:n])
	return n
}
