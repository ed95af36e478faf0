package kernels

import (
	"fmt"
	"sync"
)

// q4FloatMinTokens is the fewest tokens for which a q4 product takes float32
// activations (MatMulQ4Float) rather than int8 ones (Int8Acts,
// MatMulQ4Acts), where the float GEMM has assembly (Q4FloatActs). Measured
// with BenchmarkQ4Batch (2 threads, G = 64, weights streamed from DRAM, W4A8
// timed with its activation quantization) on a 2-core AMD Zen 5 (AVX-512), one
// run: W4A8 time / float time at n = 2, 3, 4 was 0.96, 1.13, 1.35 on
// 896x896, 1.74, 1.90, 2.57 on 128x896, 0.77, 0.75, 0.93 on 4864x896 (the
// float GEMM wins there only from 7 tokens) and 1.08, 1.36, 1.58 on
// 896x4864; weighted by a Qwen2.5-0.5B layer's products the float GEMM is
// ahead from 4 tokens. Commit 5ae32dc has the table (in the BENCHMARKS.md of
// that time).
const q4FloatMinTokens = 4

// Q4FloatActs reports whether a q4 product of n tokens should multiply the
// float32 activations directly (MatMulQ4Float) rather than quantize them to
// int8 (Int8Acts, MatMulQ4Acts): true for batches of at least
// q4FloatMinTokens tokens on machines with the float GEMM in assembly
// (amd64 with AVX2 or AVX-512); decode, and every product elsewhere, stays
// on the W4A8 kernels. MatMulQ4 follows it; callers that quantize their
// inputs once for several matrices (the CPU backend's prepared input) ask it first.
func Q4FloatActs(n int) bool { return n >= q4FloatMinTokens && q4FloatFast() }

// MatMulQ4Float multiplies n tokens of float32 activations x [n, cols] by
// the q4 matrix of rows x cols weights given by w, scale, offset and group
// (as in MatVecQ4):
//
//	y[t*ldy+r] = sum_c x[t*cols+c] * scale[r,g] * (q[r,c] - offset[r,g])   g = c/group
//
// with no activation quantization: each weight is dequantized to float32
// exactly as quant.DequantizeQ4 does (scale * (q - offset), in float32) and
// multiplied by the float activation. The result is the product of the
// dequantized weights with x itself, within float32 rounding, so it is more
// accurate than MatMulQ4Acts (whose activations carry the int8 rounding).
// Row ranges work as in MatMulQ4Acts: y[lo:], ldy = the full row count, the
// row range of w, scale and offset, rows = hi-lo.
//
// It is the batched (prefill, multi-stream decode) q4 product: on amd64 an
// AVX-512 (VBMI) 8-token x 3-row tile that looks the weights up in per-group
// tables of the 16 code values, or an AVX2 4x3 tile, both modelled on the
// fp16 GEMM (internal/gen/q4f.go); elsewhere the Go twin.
func MatMulQ4Float(y []float32, ldy int, x []float32, n int, w []byte, scale, offset []uint16, group, rows, cols int) {
	checkQ("MatMulQ4Float", len(y), ldy, n, rows)
	if group != 32 && group != 64 && group != 128 || cols%group != 0 {
		panic(fmt.Sprintf("kernels.MatMulQ4Float: group %d: want 32, 64 or 128 dividing cols = %d", group, cols))
	}
	switch ng := rows * cols / group; {
	case n < 0 || cols < 0:
		panic(fmt.Sprintf("kernels.MatMulQ4Float: negative n %d or cols %d", n, cols))
	case len(x) < n*cols:
		panic(fmt.Sprintf("kernels.MatMulQ4Float: x has %d values, want n*cols = %d*%d", len(x), n, cols))
	case len(w) < rows*cols/2:
		panic(fmt.Sprintf("kernels.MatMulQ4Float: w has %d bytes, want rows*cols/2 = %d*%d/2", len(w), rows, cols))
	case len(scale) < ng || len(offset) < ng:
		panic(fmt.Sprintf("kernels.MatMulQ4Float: %d scales and %d offsets, want rows*cols/group = %d", len(scale), len(offset), ng))
	}
	if n == 0 || rows == 0 {
		return
	}
	if cols == 0 {
		zeroRows(y, n, ldy, 0, rows)
		return
	}
	if !matMulQ4FloatFast(y, ldy, x, n, w, scale, offset, group, rows, cols) {
		matMulQ4FloatGeneric(y, ldy, x, n, w, scale, offset, group, rows, cols)
	}
}

// q4RowPool holds the dequantized row of matMulQ4FloatGeneric and the
// float32 scales and offsets of matMulQ4FloatFast.
var q4RowPool = sync.Pool{New: func() any { return new([]float32) }}

// q4Floats returns a pooled buffer of n float32 (return it to q4RowPool).
func q4Floats(n int) *[]float32 {
	p := q4RowPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// matMulQ4FloatGeneric sets every output of MatMulQ4Float: per row it
// dequantizes the weights (float32, as quant.DequantizeQ4) and takes their
// float32 dot product with each token's activations.
func matMulQ4FloatGeneric(y []float32, ldy int, x []float32, n int, w []byte, scale, offset []uint16, group, rows, cols int) {
	tab := f16Table()
	ng := cols / group
	p := q4Floats(cols)
	row := *p
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c += 2 {
			g := r*ng + c/group
			s, o := tab[scale[g]], tab[offset[g]]
			b := w[r*cols/2+c/2]
			row[c] = s * (float32(b&15) - o)
			row[c+1] = s * (float32(b>>4) - o)
		}
		for t := 0; t < n; t++ {
			y[t*ldy+r] = dotF32(row, x[t*cols:(t+1)*cols])
		}
	}
	q4RowPool.Put(p)
}

// dotF32 returns sum w[i]*x[i] with four partial sums.
func dotF32(w, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		s0 += w[i] * x[i]
		s1 += w[i+1] * x[i+1]
		s2 += w[i+2] * x[i+2]
		s3 += w[i+3] * x[i+3]
	}
	for ; i < len(w); i++ {
		s0 += w[i] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}
