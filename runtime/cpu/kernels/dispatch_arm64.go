//go:build !noasm

package kernels

// useNEON selects the NEON matrix kernels. Advanced SIMD is part of every
// AArch64 CPU that Go supports (Go's own runtime and crypto assume it), and
// FCVTL (fp16 -> fp32) is base ARMv8.0, so there is nothing to detect.
const useNEON = true

// HasAsm reports whether the matrix kernels use assembly on this machine.
// On arm64 the vector helpers (Dot, Softmax, ...) are still pure Go.
func HasAsm() bool { return useNEON }

//go:noescape
func matVecF16NEON(y []float32, w []uint16, x []float32, rows, cols, k int)

//go:noescape
func matVecF32NEON(y []float32, w []float32, x []float32, rows, cols, k int)

func matVecF16Fast(y []float32, w []uint16, x []float32, rows, cols int) int {
	k := cols &^ 7
	if k == 0 || rows == 0 {
		return 0
	}
	matVecF16NEON(y, w, x, rows, cols, k)
	return k
}

func matVecF32Fast(y []float32, w []float32, x []float32, rows, cols int) int {
	k := cols &^ 7
	if k == 0 || rows == 0 {
		return 0
	}
	matVecF32NEON(y, w, x, rows, cols, k)
	return k
}

// gemmRowBlock is how many weight rows the arm64 GEMM sweeps per token
// before moving on: small enough (<= 32 KiB of fp16 at cols = 896) that the
// block stays in L1/L2 while every token of the batch reuses it.
const gemmRowBlock = 16

// matMulF16Fast computes the first cols&^7 columns of output rows [lo, hi)
// for all n tokens as one matrix-vector product per token and row block.
// There is no register-blocked NEON GEMM yet; blocking the rows at least
// reads each weight from cache rather than memory for all but one token.
func matMulF16Fast(y, x []float32, w []uint16, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if k == 0 {
		return 0
	}
	for r0 := lo; r0 < hi; r0 += gemmRowBlock {
		r1 := min(hi, r0+gemmRowBlock)
		for t := 0; t < n; t++ {
			matVecF16NEON(y[t*rows+r0:t*rows+r1], w[r0*cols:r1*cols], x[t*cols:(t+1)*cols], r1-r0, cols, k)
		}
	}
	return k
}

// matMulF32Fast is matMulF16Fast for float32 weights.
func matMulF32Fast(y, x, w []float32, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if k == 0 {
		return 0
	}
	for r0 := lo; r0 < hi; r0 += gemmRowBlock {
		r1 := min(hi, r0+gemmRowBlock)
		for t := 0; t < n; t++ {
			matVecF32NEON(y[t*rows+r0:t*rows+r1], w[r0*cols:r1*cols], x[t*cols:(t+1)*cols], r1-r0, cols, k)
		}
	}
	return k
}
