//go:build !noasm

package quant

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/asmgen . -pkg quant -out ../../q4fit_amd64.s -stubs ../../stubs_amd64.go

// q4Best is the best kernel set of the q4 fit this CPU (and OS) can run: the AVX2 kernels
// need AVX2, FMA3 and F16C, the AVX-512 ones AVX-512F and VL besides (VL for the EVEX forms
// of 256- and 128-bit instructions on registers 16..31).
var q4Best = func() int {
	x := cpu.X86
	switch {
	case x.HasAVX2 && x.HasFMA && x.HasF16C && x.HasAVX512F && x.HasAVX512VL:
		return q4AVX512
	case x.HasAVX2 && x.HasFMA && x.HasF16C:
		return q4AVX2
	}
	return q4Go
}()

// hasQ8Asm is true when the CPU can run the q8 kernels (maxAbsBitsAVX2, q8RowAVX2): AVX2.
var hasQ8Asm = cpu.X86.HasAVX2
