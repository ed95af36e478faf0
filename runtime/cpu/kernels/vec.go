package kernels

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/half"
)

// Per-token vector operations. They touch kilobytes, not megabytes, so only
// Dot and Sum (used in loops over the KV cache and as a bandwidth yardstick)
// have assembly; the rest are plain Go.
//
// Where the result must match Hugging Face transformers closely (RMSNorm,
// RoPE) the code keeps PyTorch's order of operations, and writes products
// as float32(a*b) so no compiler may fuse them into an FMA (Go fuses x*y+z
// on arm64 unless an explicit conversion rounds the product first).

// Dot returns sum_i x[i]*y[i]; y must be at least as long as x.
func Dot(x, y []float32) float32 {
	if len(y) < len(x) {
		panic(fmt.Sprintf("kernels.Dot: len(y) = %d < len(x) = %d", len(y), len(x)))
	}
	s, n := dotFast(x, y)
	if n < len(x) {
		s += dotGeneric(x[n:], y[n:len(x)])
	}
	return s
}

// Sum returns the sum of x.
func Sum(x []float32) float32 {
	s, n := sumFast(x)
	if n < len(x) {
		s += sumGeneric(x[n:])
	}
	return s
}

// Axpy adds a*x to y: y[i] += a*x[i] (the weighted sum over V in attention).
func Axpy(y []float32, a float32, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += float32(a * v)
	}
}

// Scale multiplies x by a in place.
func Scale(x []float32, a float32) {
	for i := range x {
		x[i] *= a
	}
}

// Add adds x to y in place: y[i] += x[i] (the residual connections).
func Add(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += v
	}
}

// RMSNorm writes dst = x * rsqrt(mean(x²) + eps) * weight, as HF's
// Qwen2RMSNorm does in float32: variance first, then x times the reciprocal
// square root, then the weight times that. The mean of squares is summed in
// float64, which is at least as accurate as PyTorch's float32 cascade sum.
// dst may be x.
func RMSNorm(dst, x, weight []float32, eps float32) {
	if len(dst) < len(x) || len(weight) < len(x) {
		panic(fmt.Sprintf("kernels.RMSNorm: len(x) = %d, len(dst) = %d, len(weight) = %d", len(x), len(dst), len(weight)))
	}
	if len(x) == 0 {
		return
	}
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	variance := float32(ss / float64(len(x)))
	r := float32(1 / math.Sqrt(float64(variance+eps)))
	for i, v := range x {
		dst[i] = weight[i] * float32(v*r)
	}
}

// Softmax replaces x by softmax(x) in place: exp(x - max) / sum, in float32
// with the sum accumulated in float64. -Inf entries (masked positions) become
// 0; an all--Inf input becomes all NaN, as in PyTorch.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	var s float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		s += float64(e)
	}
	inv := 1 / s
	for i, e := range x {
		x[i] = float32(float64(e) * inv)
	}
}

// SwiGLU writes dst[i] = silu(gate[i]) * up[i] with silu(g) = g*sigmoid(g),
// the Qwen2 MLP activation. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) {
	if len(gate) < len(dst) || len(up) < len(dst) {
		panic(fmt.Sprintf("kernels.SwiGLU: len(dst) = %d, len(gate) = %d, len(up) = %d", len(dst), len(gate), len(up)))
	}
	for i := range dst {
		g := float64(gate[i])
		dst[i] = float32(g/(1+math.Exp(-g))) * up[i]
	}
}

// RoPE rotates heads vectors of headDim values in place with HF's
// rotate_half convention, for one position:
//
//	out = x*cos + rotate_half(x)*sin,  rotate_half(x) = concat(-x2, x1)
//
// where x1, x2 are the two halves of each head and cos, sin are that
// position's tables of headDim values (HF's cat(freqs, freqs) layout).
// headDim must be even; x holds heads*headDim values.
func RoPE(x []float32, heads, headDim int, cos, sin []float32) {
	if headDim%2 != 0 || len(x) < heads*headDim || len(cos) < headDim || len(sin) < headDim {
		panic(fmt.Sprintf("kernels.RoPE: len(x) = %d, heads = %d, headDim = %d, len(cos) = %d, len(sin) = %d", len(x), heads, headDim, len(cos), len(sin)))
	}
	h := headDim / 2
	for k := 0; k < heads; k++ {
		v := x[k*headDim : (k+1)*headDim]
		for i := 0; i < h; i++ {
			a, b := v[i], v[i+h]
			v[i] = float32(a*cos[i]) + float32(-b*sin[i])
			v[i+h] = float32(b*cos[i+h]) + float32(a*sin[i+h])
		}
	}
}

// RowF16 widens row `row` of an fp16 matrix with cols columns into dst (the
// embedding lookup: dst = table[row]).
func RowF16(dst []float32, w []uint16, row, cols int) {
	if row < 0 || (row+1)*cols > len(w) || len(dst) < cols {
		panic(fmt.Sprintf("kernels.RowF16: row %d of a %d-value matrix with %d columns into %d values", row, len(w), cols, len(dst)))
	}
	half.F16ToF32(dst[:cols], w[row*cols:(row+1)*cols])
}
