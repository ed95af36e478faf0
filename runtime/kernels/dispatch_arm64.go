//go:build !noasm

package kernels

// useNEON selects the NEON matrix kernels. Advanced SIMD is part of every
// AArch64 CPU that Go supports (Go's own runtime and crypto assume it), and
// FCVTL (fp16 -> fp32) is base ARMv8.0, so there is nothing to detect.
const useNEON = true

// HasAsm reports whether the kernels use assembly on this machine. On arm64
// the matrix kernels, Dot and Axpy do; Sum, Softmax and SwiGLU are pure Go.
func HasAsm() bool { return useNEON }

//go:noescape
func matVecF16NEON(y []float32, w []uint16, x []float32, rows, cols, k int)

//go:noescape
func matVecF32NEON(y []float32, w []float32, x []float32, rows, cols, k int)

//go:noescape
func dotNEON(x, y []float32) float32

//go:noescape
func axpyNEON(y, x []float32, a float32)

func dotFast(x, y []float32) (float32, int) {
	n := len(x) &^ 7
	if n == 0 {
		return 0, 0
	}
	return dotNEON(x[:n], y[:n]), n
}

func axpyFast(y []float32, a float32, x []float32) int {
	n := len(x) &^ 7
	if n == 0 {
		return 0
	}
	axpyNEON(y[:n], x[:n], a)
	return n
}

// The other vector helpers have no NEON code yet.

func sumFast(x []float32) (float32, int)                    { return 0, 0 }
func swigluFast(dst, gate, up []float32) int                { return 0 }
func expSumFast(dst, x []float32, m float32) (float32, int) { return 0, 0 }
func maxFast(x []float32) (float32, int)                    { return 0, 0 }
func scaleFast(x []float32, a float32) int                  { return 0 }

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

// No NN kernels in assembly here: the Go twin does all of gemmNN.
func gemmNNFast(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) int {
	return 0
}
