package kernels

import (
	"fmt"
	"math"
)

// Int8Acts holds n activation vectors (tokens) of cols values quantized to
// int8 for the q4 kernels (W4A8; q8 weights read Int16Acts): each block of
// 32 consecutive values of a token (the last block may be shorter) gets its
// own float32 scale
//
//	d = max|x_block| / 127,   q = round-half-even(x * (127 / max|x_block|))   (in float32)
//
// so one large outlier only coarsens its own block (real hidden states have
// a few channels 100x larger than the rest, which one scale per token would
// let drown everything else). The kernels then compute exact integer dot
// products of weights and q per block and apply the scales in float32, so
// their result is the product of the dequantized weights with the
// dequantized activations d*q, up to float32 rounding.
//
// Quantize once per token (or batch) and pass the same Int8Acts to every
// weight matrix and row range that multiplies it: the kernels only read it,
// so it may be shared by goroutines working on different rows. The zero
// value is ready to use; Quantize reuses its buffers.
type Int8Acts struct {
	n, cols int
	nb      int       // blocks of 32 per token, ceil(cols/32)
	nc      int       // whole chunks of 64 per token, cols/64
	q       []int8    // [n][cols] quantized values, natural order
	d       []float32 // [n][nb] block scales
	bs      []float32 // [n][nb] block sums of dequantized values, d*sum(q)
	qp      []int8    // [n][nc*64] q in q4 order (see Quantize)
	meta    []float32 // [n][nc][16] q4 lane scales and lane sums (see Quantize)
}

// N returns the number of tokens held.
func (a *Int8Acts) N() int { return a.n }

// Cols returns the length of each token's vector.
func (a *Int8Acts) Cols() int { return a.cols }

// Quantize replaces the contents of a with the n vectors x[t*cols:(t+1)*cols].
//
// Besides the natural order it lays the values out for the q4 assembly,
// which splits 32 weight bytes into their 32 low nibbles (even elements)
// and 32 high nibbles (odd elements): per chunk of 64 values qp holds the 32
// even ones then the 32 odd ones, and meta holds 8 lane scales then 8 lane
// sums, lane i covering chunk elements 8i..8i+7 (the bytes one 32-bit lane
// of an int8 dot product gathers from both halves): its block scale d and d
// times the sum of its 8 quantized values.
func (a *Int8Acts) Quantize(x []float32, n, cols int) {
	if n < 0 || cols < 0 || len(x) < n*cols {
		panic(fmt.Sprintf("kernels.Int8Acts.Quantize: x has %d values, want n*cols = %d*%d", len(x), n, cols))
	}
	a.n, a.cols = n, cols
	a.nb, a.nc = (cols+31)/32, cols/64
	a.q = grow(a.q, n*cols)
	a.d = grow(a.d, n*a.nb)
	a.bs = grow(a.bs, n*a.nb)
	a.qp = grow(a.qp, n*a.nc*64)
	a.meta = grow(a.meta, n*a.nc*16)
	for t := 0; t < n; t++ {
		a.quantizeToken(t, x[t*cols:(t+1)*cols])
	}
}

// quantizeToken fills every view of token t from its values xt.
func (a *Int8Acts) quantizeToken(t int, xt []float32) {
	cols := a.cols
	q := a.q[t*cols : (t+1)*cols]
	d, bs := a.d[t*a.nb:(t+1)*a.nb], a.bs[t*a.nb:(t+1)*a.nb]
	for b := range d {
		lo, hi := 32*b, min(cols, 32*b+32)
		d[b], bs[b] = quantizeBlock(q[lo:hi], xt[lo:hi])
	}
	qp := a.qp[t*a.nc*64 : (t+1)*a.nc*64]
	meta := a.meta[t*a.nc*16 : (t+1)*a.nc*16]
	for c := 0; c < a.nc; c++ {
		for j := 0; j < 32; j++ {
			qp[64*c+j] = q[64*c+2*j]
			qp[64*c+32+j] = q[64*c+2*j+1]
		}
		for i := 0; i < 8; i++ {
			e := 64*c + 8*i
			var s int32
			for _, v := range q[e : e+8] {
				s += int32(v)
			}
			db := d[e/32]
			meta[16*c+i] = db
			meta[16*c+8+i] = db * float32(s)
		}
	}
}

// quantizeBlock quantizes one block x (at most 32 values) into q and
// returns its scale d = max|x|/127 and d*sum(q). The rounding adds 1.5*2^23
// in float32, which leaves round-half-even(x*127/max) in the low mantissa
// bits: the same result as math.RoundToEven, several times faster (this
// runs on every token). A NaN in x makes d NaN, so every product that uses
// the block is NaN, as with float activations; an infinite value does too
// (d = Inf times q = 0).
func quantizeBlock(q []int8, x []float32) (d, bsum float32) {
	q = q[:len(x)]
	var amax float32
	nan := false
	for _, v := range x {
		amax = max(amax, math.Float32frombits(math.Float32bits(v)&^(1<<31)))
		nan = nan || v != v
	}
	d = amax / 127
	if nan {
		d = float32(math.NaN())
	}
	var inv float32
	if amax > 0 {
		inv = 127 / amax
	}
	var sum int32
	for i, v := range x {
		// |v*inv| <= 127 (within rounding), so no clamp is needed.
		qi := int32(math.Float32bits(v*inv+roundMagic)) - roundMagicBits
		q[i] = int8(qi)
		sum += qi
	}
	return d, d * float32(sum)
}

// roundMagic is 1.5*2^23: adding it to a float32 of magnitude < 2^22 rounds
// it to an integer (half to even) held in the low mantissa bits.
const (
	roundMagic     = 12582912
	roundMagicBits = 0x4B400000
)

// grow returns s resized to n, reallocating only when it is too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
