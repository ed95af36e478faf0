package kernels

import "fmt"

// q8FloatMinTokens is the fewest tokens for which a q8 product takes float32
// activations (MatMulQ8Float) rather than int16 ones (Int16Acts,
// MatMulQ8Acts), where the float GEMM has assembly (Q8FloatActs). Measured
// with BenchmarkQ8Batch (2 threads, weights streamed from DRAM as a model's
// layers are, W8A16 timed with its activation quantization) on a 2-core
// AMD Zen 5 (AVX-512): the float GEMM took 1.1-1.4x less time than W8A16 at 2
// and 3 tokens on all four Qwen2.5-0.5B shapes, 1.2-2.1x at 4-8 (and
// 1.04-1.35x at one token, which stays W8A16: decode keeps its kernels).
// Commit 792968f has the table (in the BENCHMARKS.md of that time).
const q8FloatMinTokens = 2

// Q8FloatActs reports whether a q8 product of n tokens should multiply the
// float32 activations directly (MatMulQ8Float) rather than quantize them to
// int16 (Int16Acts, MatMulQ8Acts): true for batches of at least
// q8FloatMinTokens tokens on machines with the float GEMM in assembly
// (amd64 with AVX2 or AVX-512); decode, and every product elsewhere, stays
// on the W8A16 kernels. MatMulQ8 follows it; callers that quantize their
// inputs once for several matrices (the CPU backend's prepared input) ask it first.
func Q8FloatActs(n int) bool { return n >= q8FloatMinTokens && q8FloatFast() }

// MatMulQ8Float multiplies n tokens of float32 activations x [n, cols] by
// the q8 matrix w [rows, cols] with scales scale [rows]:
//
//	y[t*ldy+r] = scale[r] * sum_c x[t*cols+c] * w[r*cols+c]   for t < n, r < rows
//
// with no activation quantization: each int8 weight is widened to float32
// (exactly) and multiplied by the float activation, the row's scale applied
// once to the sum. The result is the product of the dequantized weights
// with x itself, within float32 rounding, so it is at least as accurate as
// MatMulQ8Acts (whose activations carry the int16 rounding). Row ranges
// work as in MatMulQ8Acts: y[lo:], ldy = the full row count,
// w[lo*cols:hi*cols], scale[lo:hi], rows = hi-lo.
//
// It is the batched (prefill, multi-stream decode) q8 product: on amd64 an
// AVX-512 6-token x 4-row or AVX2 4x3 tile modelled on the fp16 GEMM
// (internal/gen/q8f.go), elsewhere the Go twin.
func MatMulQ8Float(y []float32, ldy int, x []float32, n int, w []int8, scale []uint16, rows, cols int) {
	checkQ("MatMulQ8Float", len(y), ldy, n, rows)
	switch {
	case n < 0 || cols < 0:
		panic(fmt.Sprintf("kernels.MatMulQ8Float: negative n %d or cols %d", n, cols))
	case len(x) < n*cols:
		panic(fmt.Sprintf("kernels.MatMulQ8Float: x has %d values, want n*cols = %d*%d", len(x), n, cols))
	case len(w) < rows*cols:
		panic(fmt.Sprintf("kernels.MatMulQ8Float: w has %d values, want rows*cols = %d*%d", len(w), rows, cols))
	case len(scale) < rows:
		panic(fmt.Sprintf("kernels.MatMulQ8Float: scale has %d values, want rows = %d", len(scale), rows))
	}
	if n == 0 || rows == 0 {
		return
	}
	k := matMulQ8FloatFast(y, ldy, x, n, w, scale, rows, cols)
	if k < cols || k == 0 {
		matMulQ8FloatGeneric(y, ldy, x, n, w, scale, rows, cols, k)
	}
}

// matMulQ8FloatGeneric adds (k > 0) or sets (k == 0) the contribution of
// columns [k, cols) to every output of MatMulQ8Float: the float32 dot
// product of the widened weights with the activations, times the row's
// scale.
func matMulQ8FloatGeneric(y []float32, ldy int, x []float32, n int, w []int8, scale []uint16, rows, cols, k int) {
	tab := f16Table()
	for r := 0; r < rows; r++ {
		row := w[r*cols+k : (r+1)*cols]
		sc := tab[scale[r]]
		for t := 0; t < n; t++ {
			s := sc * dotI8F32(row, x[t*cols+k:(t+1)*cols])
			if k == 0 {
				y[t*ldy+r] = s
			} else {
				y[t*ldy+r] += s
			}
		}
	}
}

// dotI8F32 returns sum float32(w[i])*x[i] with four partial sums.
func dotI8F32(w []int8, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += float32(w[i]) * x[i]
		s1 += float32(w[i+1]) * x[i+1]
		s2 += float32(w[i+2]) * x[i+2]
		s3 += float32(w[i+3]) * x[i+3]
	}
	for ; i < len(w); i++ {
		s0 += float32(w[i]) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}
