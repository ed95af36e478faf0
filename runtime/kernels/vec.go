package kernels

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/half"
)

// Per-token vector operations. They touch kilobytes, not megabytes; the ones
// that run in inner loops (Dot and Axpy over the KV cache, Softmax) or call
// exp (SwiGLU) have assembly, the rest are plain Go.
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
// The assembly fuses the multiply-add (one rounding), the Go twin rounds the
// product first; they differ by at most an ulp of each term.
func Axpy(y []float32, a float32, x []float32) {
	y = y[:len(x)]
	for i := axpyFast(y, a, x); i < len(x); i++ {
		y[i] += float32(a * x[i])
	}
}

// Scale multiplies x by a in place.
func Scale(x []float32, a float32) {
	for i := scaleFast(x, a); i < len(x); i++ {
		x[i] *= a
	}
}

// Max returns the largest value of x (x must not be empty). NaNs are for the
// caller to avoid: the Go loop skips them unless x[0] is one, the assembly
// may return one.
func Max(x []float32) float32 {
	m, n := maxFast(x)
	if n == 0 {
		m, n = x[0], 1
	}
	for _, v := range x[n:] {
		if v > m { // not the max builtin: its NaN and ±0 rules cost a branch chain
			m = v
		}
	}
	return m
}

// Argmax returns the index of the largest value of x, the first on ties, as
// torch.argmax does, skipping NaNs (0 when x[0] is NaN or x is empty, as a
// scan that keeps the first strictly larger value gives). It finds the
// largest value block by block with Max's vector loop, then the first index
// of it in the block that has it: a greedy decode step scans a 151,936-token
// vocabulary this way in a fraction of the element-by-element scan's time.
func Argmax(x []float32) int {
	if len(x) == 0 || x[0] != x[0] {
		return 0
	}
	const block = 1024
	best, at := x[0], 0 // the largest value so far and the start of the first block holding it
	for lo := 0; lo < len(x); lo += block {
		b := x[lo:min(lo+block, len(x))]
		m := Max(b)
		if m != m { // a NaN in the block, which the vector loop may return
			m = float32(math.Inf(-1))
			for _, v := range b {
				if v > m {
					m = v
				}
			}
		}
		if m > best {
			best, at = m, lo
		}
	}
	for i, v := range x[at:] {
		if v == best {
			return at + i
		}
	}
	return 0 // not reached: best is a value of x
}

// Add adds x to y in place: y[i] += x[i] (the residual connections).
func Add(y, x []float32) {
	y = y[:len(x)]
	// The axpy kernel with a = 1: a fused 1*x+y rounds once, exactly as y+x does.
	for i := axpyFast(y, 1, x); i < len(x); i++ {
		y[i] += x[i]
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
	variance := float32(sumSquares64(x) / float64(len(x)))
	r := float32(1 / math.Sqrt(float64(variance+eps)))
	dst, weight = dst[:len(x)], weight[:len(x)]
	for i, v := range x {
		dst[i] = weight[i] * float32(v*r)
	}
}

// sumSquares64 returns the sum of x[i]² in float64, where every square of a float32 is exact.
// Four interleaved partial sums let the additions overlap instead of each waiting for the last
// (a norm of 896 values took 0.87 µs on one chain, most of a 128-token prefill's serial work);
// either order is far more accurate than the float32 the result is rounded to.
func sumSquares64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sum64 returns the sum of x in float64, in four interleaved partial sums (see sumSquares64).
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sumCentredSquares64 returns the sum of (x[i] - mean)² in float64, in four interleaved
// partial sums (see sumSquares64).
func sumCentredSquares64(x []float32, mean float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i])-mean, float64(x[i+1])-mean, float64(x[i+2])-mean, float64(x[i+3])-mean
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - mean
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// RMSNormPlusOne writes dst = x * rsqrt(mean(x²) + eps) * (1 + weight), the
// zero-centred norm of Gemma and Qwen3.5 (their RMSNorm computes
// x̂ * (1.0 + w) in float32). dst may be x.
func RMSNormPlusOne(dst, x, weight []float32, eps float32) {
	if len(dst) < len(x) || len(weight) < len(x) {
		panic(fmt.Sprintf("kernels.RMSNormPlusOne: len(x) = %d, len(dst) = %d, len(weight) = %d", len(x), len(dst), len(weight)))
	}
	if len(x) == 0 {
		return
	}
	variance := float32(sumSquares64(x) / float64(len(x)))
	r := float32(1 / math.Sqrt(float64(variance+eps)))
	dst, weight = dst[:len(x)], weight[:len(x)]
	for i, v := range x {
		dst[i] = float32(v*r) * (1 + weight[i])
	}
}

// LayerNorm writes dst = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias, the biased
// variance, as torch.nn.LayerNorm does in float32 (mean and variance accumulated in float64
// here, which is at least as accurate as PyTorch's float32 Welford moments). dst may be x.
func LayerNorm(dst, x, weight, bias []float32, eps float32) {
	if len(dst) < len(x) || len(weight) < len(x) || len(bias) < len(x) {
		panic(fmt.Sprintf("kernels.LayerNorm: len(x) = %d, len(dst) = %d, len(weight) = %d, len(bias) = %d", len(x), len(dst), len(weight), len(bias)))
	}
	if len(x) == 0 {
		return
	}
	mean := sum64(x) / float64(len(x))
	ss := sumCentredSquares64(x, mean)
	rstd := float32(1 / math.Sqrt(float64(float32(ss/float64(len(x)))+eps)))
	m := float32(mean)
	dst, weight, bias = dst[:len(x)], weight[:len(x)], bias[:len(x)]
	for i, v := range x {
		dst[i] = float32(float32(v-m)*rstd)*weight[i] + bias[i]
	}
}

// GeluTanh writes dst = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), PyTorch's
// gelu(approximate="tanh") and Hugging Face's gelu_new, in float32. dst may be x.
func GeluTanh(dst, x []float32) {
	if len(dst) < len(x) {
		panic(fmt.Sprintf("kernels.GeluTanh: len(x) = %d, len(dst) = %d", len(x), len(dst)))
	}
	for i := geluTanhFast(dst, x); i < len(x); i++ {
		dst[i] = geluTanh(x[i])
	}
}

// GeGLU writes dst[i] = gelu_tanh(gate[i]) * up[i], Gemma's MLP activation. dst may
// alias gate or up.
func GeGLU(dst, gate, up []float32) {
	if len(gate) < len(dst) || len(up) < len(dst) {
		panic(fmt.Sprintf("kernels.GeGLU: len(dst) = %d, len(gate) = %d, len(up) = %d", len(dst), len(gate), len(up)))
	}
	for i := geGLUFast(dst, gate, up); i < len(dst); i++ {
		dst[i] = geluTanh(gate[i]) * up[i]
	}
}

// geluKBeta is √2·(2/√π)·0.5 = √(2/π), PyTorch's kBeta.
const geluKBeta = math.Sqrt2 * (2 / math.SqrtPi) * 0.5

// geluTanh uses 0.5·(1 + tanh(z)) = 1/(1 + exp(-2z)): one float32 exponential (expf32,
// within 2 ulp) instead of a float64 tanh, which made GPT-2's activation a quarter of its
// prefill, and no cancellation where tanh(z) is near -1 (very negative x), so the result is
// within a few float32 ulps of the float64 formula everywhere (TestGelu).
func geluTanh(x float32) float32 {
	// The conversion of the product keeps it a separate rounding: a compiler that fuses
	// x + c·x³ into one FMA (arm64's does) would move the result several ulp away from the
	// assembly's, which rounds each step.
	inner := float32(geluKBeta) * (x + float32(float32(0.044715)*float32(x*x*x)))
	return x / (1 + expf32(-2*inner))
}

// Softmax replaces x by softmax(x) in place, as PyTorch does it in float32:
// m = max(x), e = exp(x - m), s = sum(e), x = e * (1/s). -Inf entries (masked
// positions) become exactly 0. exp is expf32's (within 2 ulp).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	Scale(x, 1/expRowMax(x, Max(x)))
}

// expRowMax replaces x by exp(x - m) and returns its sum: Softmax's exponentials, which the
// attention paths also take against a maximum of their own (a row's, or several runs').
func expRowMax(x []float32, m float32) float32 {
	s, n := expSumFast(x, x, m)
	for i := n; i < len(x); i++ {
		e := expf32(x[i] - m)
		x[i] = e
		s += e
	}
	return s
}

// SwiGLU writes dst[i] = silu(gate[i]) * up[i] with silu(g) = g/(1+exp(-g))
// (PyTorch's formula), the Qwen2 MLP activation. dst may alias gate or up.
func SwiGLU(dst, gate, up []float32) {
	if len(gate) < len(dst) || len(up) < len(dst) {
		panic(fmt.Sprintf("kernels.SwiGLU: len(dst) = %d, len(gate) = %d, len(up) = %d", len(dst), len(gate), len(up)))
	}
	for i := swigluFast(dst, gate, up); i < len(dst); i++ {
		g := gate[i]
		dst[i] = g / (1 + expf32(-g)) * up[i]
	}
}

// expf32 constants: Cephes' expf (see internal/gen, which emits the same
// algorithm in assembly).
const (
	expHi   = 88.0
	expLo   = -87.33654
	log2e   = 1.44269504088896341
	ln2Hi   = 0.693359375
	ln2Lo   = -2.12194440e-4
	expP0   = 1.9875691500e-4
	expP1   = 1.3981999507e-3
	expP2   = 8.3334519073e-3
	expP3   = 4.1665795894e-2
	expP4   = 1.6666665459e-1
	expP5   = 5.0000001201e-1
	expBias = 127
	expMax  = 88.72283905206835 // log(MaxFloat32)
)

// expf32 returns e^x in float32 within 2 ulp on [-87.3, 88]; it returns 0
// below that range (and for -Inf), +Inf above log(MaxFloat32) (PyTorch's
// float32 overflow, so silu(-100) = -0 as in HF) and e^88 in between, as
// the assembly does. n = round(x*log2(e)) splits x = n*ln2 + r with |r| <=
// ln2/2, a polynomial gives e^r and the exponent bits give 2^n.
func expf32(x float32) float32 {
	if x < expLo {
		return 0
	}
	if x > expMax {
		return float32(math.Inf(1))
	}
	x = min(x, expHi)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2Hi
	r = r - n*ln2Lo
	y := float32(expP0)
	y = y*r + expP1
	y = y*r + expP2
	y = y*r + expP3
	y = y*r + expP4
	y = y*r + expP5
	y = y*(r*r) + r
	y += 1
	return y * math.Float32frombits(uint32(int32(n)+expBias)<<23)
}

// RoPE rotates heads vectors of headDim values in place with HF's
// rotate_half convention, for one position:
//
//	out = x*cos + rotate_half(x)*sin,  rotate_half(x) = concat(-x2, x1)
//
// over the first rot = len(cos) dimensions of each head, where x1, x2 are the
// two halves of those dimensions and cos, sin are that position's tables (HF's
// cat(freqs, freqs) layout); the remaining headDim-rot dimensions pass through
// (partial rotary embeddings). rot must be even and at most headDim; x holds
// heads*headDim values.
func RoPE(x []float32, heads, headDim int, cos, sin []float32) {
	rot := len(cos)
	if rot%2 != 0 || rot == 0 || rot > headDim || len(x) < heads*headDim || len(sin) != rot {
		panic(fmt.Sprintf("kernels.RoPE: len(x) = %d, heads = %d, headDim = %d, len(cos) = %d, len(sin) = %d", len(x), heads, headDim, len(cos), len(sin)))
	}
	h := rot / 2
	for k := 0; k < heads; k++ {
		v := x[k*headDim : k*headDim+rot]
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
