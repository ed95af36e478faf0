//go:build !noasm

package kernels

import "fmt"

// useNEON selects the NEON kernels. Advanced SIMD is part of every AArch64
// CPU that Go supports (Go's own runtime and crypto assume it), and FCVTL
// (fp16 -> fp32) is base ARMv8.0, so there is nothing to detect; only
// LimitISA("go") turns it off.
var useNEON = true

// HasAsm reports whether the kernels use assembly on this machine. On arm64
// the matrix kernels, Dot, Axpy, Softmax and the activations do; Sum is pure Go.
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
	if n == 0 || !useNEON {
		return 0, 0
	}
	return dotNEON(x[:n], y[:n]), n
}

func axpyFast(y []float32, a float32, x []float32) int {
	n := len(x) &^ 7
	if n == 0 || !useNEON {
		return 0
	}
	axpyNEON(y[:n], x[:n], a)
	return n
}

// Softmax's and the activations' helpers (vecops_arm64.s), four lanes a step.

//go:noescape
func expSumNEON(dst, x []float32, m float32) float32

//go:noescape
func swigluNEON(dst, gate, up []float32)

//go:noescape
func geluTanhNEON(dst, x []float32)

//go:noescape
func geGLUNEON(dst, x, up []float32)

//go:noescape
func maxNEON(x []float32) float32

//go:noescape
func scaleNEON(x []float32, a float32)

func swigluFast(dst, gate, up []float32) int {
	n := len(dst) &^ 3
	if !useNEON || n == 0 {
		return 0
	}
	swigluNEON(dst[:n], gate[:n], up[:n])
	return n
}

func geluTanhFast(dst, x []float32) int {
	n := len(x) &^ 3
	if !useNEON || n == 0 {
		return 0
	}
	geluTanhNEON(dst[:n], x[:n])
	return n
}

func geGLUFast(dst, gate, up []float32) int {
	n := len(dst) &^ 3
	if !useNEON || n == 0 {
		return 0
	}
	geGLUNEON(dst[:n], gate[:n], up[:n])
	return n
}

func expSumFast(dst, x []float32, m float32) (float32, int) {
	n := len(x) &^ 3
	if !useNEON || n == 0 {
		return 0, 0
	}
	return expSumNEON(dst[:n], x[:n], m), n
}

func maxFast(x []float32) (float32, int) {
	n := len(x) &^ 3
	if !useNEON || n == 0 {
		return 0, 0
	}
	return maxNEON(x[:n]), n
}

func scaleFast(x []float32, a float32) int {
	n := len(x) &^ 3
	if !useNEON || n == 0 {
		return 0
	}
	scaleNEON(x[:n], a)
	return n
}

// Sum has no NEON code: nothing on a forward pass's path calls it.

func sumFast(x []float32) (float32, int) { return 0, 0 }

func matVecF16Fast(y []float32, w []uint16, x []float32, rows, cols int) int {
	k := cols &^ 7
	if k == 0 || rows == 0 || !useNEON {
		return 0
	}
	matVecF16NEON(y, w, x, rows, cols, k)
	return k
}

func matVecF32Fast(y []float32, w []float32, x []float32, rows, cols int) int {
	k := cols &^ 7
	if k == 0 || rows == 0 || !useNEON {
		return 0
	}
	matVecF32NEON(y, w, x, rows, cols, k)
	return k
}

// matMulF16Fast computes the first k = cols&^7 columns' contribution to
// output rows [lo, hi) for all n tokens with the register-blocked NEON
// kernels (gemm_arm64.s): row blocks whose weights fit in L2
// (gemmBlockBytes), tiles of neonTokens tokens, and per tile one call for
// all panels of neonRows rows of the block, then one for its leftover rows.
func matMulF16Fast(y, x []float32, w []uint16, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if k == 0 || !useNEON {
		return 0
	}
	rb := blockRowsOf(cols*2, neonRows)
	for r0 := lo; r0 < hi; r0 += rb {
		r1 := min(hi, r0+rb)
		panels := (r1 - r0) / neonRows
		re := r0 + panels*neonRows
		for t := 0; t < n; t += neonTokens {
			tt := min(neonTokens, n-t)
			xt := x[t*cols:]
			if panels > 0 {
				gemmF16NPanels[tt-1][1](y[t*rows+r0:], rows, xt, w[r0*cols:], cols, k, panels)
			}
			if re < r1 {
				gemmF16NPanels[tt-1][0](y[t*rows+re:], rows, xt, w[re*cols:], cols, k, r1-re)
			}
		}
	}
	return k
}

// matMulF32Fast is matMulF16Fast for float32 weights.
func matMulF32Fast(y, x, w []float32, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if k == 0 || !useNEON {
		return 0
	}
	rb := blockRowsOf(cols*4, neonRows)
	for r0 := lo; r0 < hi; r0 += rb {
		r1 := min(hi, r0+rb)
		panels := (r1 - r0) / neonRows
		re := r0 + panels*neonRows
		for t := 0; t < n; t += neonTokens {
			tt := min(neonTokens, n-t)
			xt := x[t*cols:]
			if panels > 0 {
				gemmF32NPanels[tt-1][1](y[t*rows+r0:], rows, xt, w[r0*cols:], cols, k, panels)
			}
			if re < r1 {
				gemmF32NPanels[tt-1][0](y[t*rows+re:], rows, xt, w[re*cols:], cols, k, r1-re)
			}
		}
	}
	return k
}

// blockRowsOf returns how many weight rows of rowBytes bytes make a block of
// about gemmBlockBytes, as a multiple of the tile height.
func blockRowsOf(rowBytes, height int) int {
	rb := gemmBlockBytes / max(rowBytes, 1)
	return max(height, rb/height*height)
}

// gemmRowMultiple is the height of the GEMM micro-tile: Pool splits GEMM
// rows in multiples of it so that no chunk ends in a partial panel.
func gemmRowMultiple() int { return neonRows }

// gemmNNFast runs the NEON NN kernels (gemm_arm64.s) on the first columns of C, a multiple of
// 16, and returns how many, in the blocks of nn_amd64.go: B in blocks of nnKBlock rows by
// nnColBlock columns, every row tile of A reusing a block before the next is loaded.
func gemmNNFast(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) int {
	nf := n &^ 15
	if nf == 0 || !useNEON {
		return 0
	}
	for k0 := 0; k0 < k; k0 += nnKBlock {
		kw := min(nnKBlock, k-k0)
		addi := 0
		if add || k0 > 0 {
			addi = 1
		}
		for j0 := 0; j0 < nf; j0 += nnColBlock {
			panels := min(nnColBlock, nf-j0) / 16
			bb := b[k0*ldb+j0:]
			for i0 := 0; i0 < m; i0 += nnRows {
				rr := min(nnRows, m-i0)
				gemmNNNKernels[rr-1](c[i0*ldc+j0:], ldc, a[i0*lda+k0:], lda, bb, ldb, kw, panels, addi)
			}
		}
	}
	return nf
}

// Cache blocks of gemmNNFast, as on amd64 (nn_amd64.go).
const (
	nnColBlock = 128
	nnKBlock   = 256
)

// chosenImpls names the kernels Kernels reports.
func chosenImpls() (gemv, gemm, nn, vec string) {
	if !useNEON {
		return "go", "go", "go", "go"
	}
	return "neon", fmt.Sprintf("neon %dx%d", neonTokens, neonRows), fmt.Sprintf("neon %dx16", nnRows), "neon"
}

// isaNames are ISALevels on arm64.
var isaNames = []string{"dotprod", "neon", "go"}

// ISA names the best instruction-set level the kernels use now (see ISALevels): what the CPU
// has, under LimitISA's cap.
func ISA() string {
	switch {
	case useSDOT:
		return "dotprod"
	case useNEON:
		return "neon"
	}
	return "go"
}

// capISA turns off the kernels above level (LimitISA has checked the name).
func capISA(level string) {
	switch level {
	case "neon":
		useSDOT = false
	case "go":
		useSDOT, useNEON = false, false
	}
}
