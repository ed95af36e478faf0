//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

// useSDOT selects the NEON q8 kernel, which needs the dot-product extension
// (FEAT_DotProd: every Apple M-series core, most ARMv8.2+ cores).
var useSDOT = cpu.ARM64.HasASIMDDP

//go:noescape
func q8RowsSDOT(y []float32, w []int8, x []int8, d []float32, rows, cols, k int)

// QuantKernels names the instruction set the quantized matrix kernels use on
// this machine: "sdot" (q8 only; q4 runs in Go on arm64) or "go".
func QuantKernels() string {
	if useSDOT {
		return "sdot"
	}
	return "go"
}

// q8RowBlock is how many weight rows the arm64 q8 GEMM sweeps per token
// before moving on (28 KiB at cols = 896), so that the block is read from
// cache for all tokens but the first.
const q8RowBlock = 32

// matMulQ8Fast computes the first k = cols&^31 columns of every output and
// returns k, or 0 without SDOT: one matrix-vector product per token and row
// block, then each row's weight scale.
func matMulQ8Fast(y []float32, ldy int, a *Int8Acts, w []int8, scale []uint16, rows int) int {
	cols := a.cols
	k := cols &^ 31
	if !useSDOT || k == 0 {
		return 0
	}
	tab := f16Table()
	rb := rows
	if a.n > 1 {
		rb = q8RowBlock
	}
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		for t := 0; t < a.n; t++ {
			yt := y[t*ldy+r0 : t*ldy+r1]
			q8RowsSDOT(yt, w[r0*cols:r1*cols], a.q[t*cols:(t+1)*cols], a.d[t*a.nb:(t+1)*a.nb], r1-r0, cols, k)
			for i := range yt {
				yt[i] *= tab[scale[r0+i]]
			}
		}
	}
	return k
}

// No NEON code for the q4 kernels yet: the pure-Go twin does all the work.
func matMulQ4Fast(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows int) int {
	return 0
}
