//go:build !noasm

package quant

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/asmgen . -pkg quant -out ../../q4fit_amd64.s -stubs ../../stubs_amd64.go

// hasQ4Asm is true when the CPU (and OS) can run the q4 fit kernels of q4fit_amd64.s: AVX2
// and FMA3.
var hasQ4Asm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasQ8Asm is true when the CPU can run the q8 kernels (maxAbsBitsAVX2, q8RowAVX2): AVX2.
var hasQ8Asm = cpu.X86.HasAVX2

// sweepSumsAsm is sweepSums in assembly.
func (f *q4Fit) sweepSumsAsm(is *[12]float64, n int) {
	q4SweepAVX2(f.dl[:n], f.wd[:n], is, &f.sums)
}

// evalErrsAsm is evalErrs in assembly: one kernel for each count of 4-lane vectors.
func (f *q4Fit) evalErrsAsm(n int) {
	switch wd := f.wd[:n]; (f.k + 3) / 4 {
	case 1:
		q4Eval1AVX2(wd, &f.inv, &f.z, &f.sf, &f.zf, &f.errs)
	case 2:
		q4Eval2AVX2(wd, &f.inv, &f.z, &f.sf, &f.zf, &f.errs)
	case 3:
		q4Eval3AVX2(wd, &f.inv, &f.z, &f.sf, &f.zf, &f.errs)
	case 4:
		q4Eval4AVX2(wd, &f.inv, &f.z, &f.sf, &f.zf, &f.errs)
	}
}
