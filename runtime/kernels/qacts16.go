package kernels

import (
	"fmt"
	"math"
)

// q16Max is the largest |value| of Int16Acts: 254*127, so that every value
// Q also splits exactly into two int8 planes Q = 254*q1 + q2 with q1, q2 in
// [-127, 127] (see Int16Acts). It gives up 0.02 bits against 32767.
const q16Max = 254 * 127

// Int16Acts holds n activation vectors (tokens) of cols values quantized to
// 16-bit integers for the q8 kernels (W8A16): each block of 32 consecutive
// values of a token (the last block may be shorter) gets its own float32
// scale
//
//	d = max|x_block| / 32258,   Q = round-half-even(x * (32258 / max|x_block|))   (in float32)
//
// with 32258 = 254*127. The kernels compute the exact integer dot product
// of each block with a row of int8 weights (|sum| <= 32*127*32258 < 2^31)
// and apply the scales in float32, so their result is the product of the
// dequantized weights with the dequantized activations d*Q, up to float32
// rounding.
//
// Why 16 bits for q8 weights: int8 activations (Int8Acts) add an error as
// large as that of the int8 weights themselves and, on a real model, half
// of the KL divergence of an int8 bundle from its fp16 twin;
// docs/quantization.md has the measurements. A step of max/32258 makes the
// activation error negligible next to the weights'.
//
// Why 254*127 rather than 32767: the same integers can then be multiplied
// as int16 (AVX2 VPMADDWD, VNNI VPDPWSSD) or as two int8 planes, q1 =
// round(Q/254) and q2 = Q - 254*q1, each with an int8 dot product (NEON
// SDOT, four times the multiplies per instruction of the int16 ones), and
// 254*I(q1) + I(q2) = I(Q) exactly: every kernel sees the same integer
// result. The planes are only built where a kernel reads them (arm64).
//
// Quantize once per token (or batch) and pass the same Int16Acts to every
// weight matrix and row range that multiplies it: the kernels only read it,
// so it may be shared by goroutines working on different rows. The zero
// value is ready to use; Quantize reuses its buffers.
type Int16Acts struct {
	n, cols int
	nb      int       // blocks of 32 per token, ceil(cols/32)
	q       []int16   // [n][cols] quantized values, natural order
	d       []float32 // [n][nb] block scales
	planes  []int8    // [n][cols/32][64] per whole block: q1 (32 bytes), then q2 (32 bytes)
}

// N returns the number of tokens held.
func (a *Int16Acts) N() int { return a.n }

// Cols returns the length of each token's vector.
func (a *Int16Acts) Cols() int { return a.cols }

// Quantize replaces the contents of a with the n vectors x[t*cols:(t+1)*cols].
func (a *Int16Acts) Quantize(x []float32, n, cols int) {
	if n < 0 || cols < 0 || len(x) < n*cols {
		panic(fmt.Sprintf("kernels.Int16Acts.Quantize: x has %d values, want n*cols = %d*%d", len(x), n, cols))
	}
	a.n, a.cols = n, cols
	a.nb = (cols + 31) / 32
	a.q = grow(a.q, n*cols)
	a.d = grow(a.d, n*a.nb)
	for t := 0; t < n; t++ {
		q, d := a.q[t*cols:(t+1)*cols], a.d[t*a.nb:(t+1)*a.nb]
		xt := x[t*cols : (t+1)*cols]
		for b := range d {
			lo, hi := 32*b, min(cols, 32*b+32)
			d[b] = quantizeBlock16(q[lo:hi], xt[lo:hi])
		}
	}
	if q16Planes {
		a.split()
	}
}

// split fills a.planes from a.q: per whole block of 32, q1 =
// floor((Q+127)/254) (Q/254 rounded, ties up) and q2 = Q - 254*q1, so that
// Q = 254*q1 + q2 exactly with q1 in [-127, 127] and q2 in [-127, 126]. A
// leftover block shorter than 32 has no planes: the Go twin handles those
// columns.
func (a *Int16Acts) split() {
	nw := a.cols / 32
	a.planes = grow(a.planes, a.n*nw*64)
	for t := 0; t < a.n; t++ {
		q := a.q[t*a.cols : (t+1)*a.cols]
		p := a.planes[t*nw*64 : (t+1)*nw*64]
		for b := 0; b < nw; b++ {
			blk := p[64*b : 64*b+64]
			for i, v := range q[32*b : 32*b+32] {
				// Q in [-32258, 32258] (clamped: only a NaN block, whose
				// scale poisons every product anyway, can hold other
				// values); Q+127+254*128 is then positive, so integer
				// division floors.
				qi := min(max(int32(v), -q16Max), q16Max)
				q1 := (qi+127+254*128)/254 - 128
				blk[i] = int8(q1)
				blk[32+i] = int8(qi - 254*q1)
			}
		}
	}
}

// quantizeBlock16 quantizes one block x (at most 32 values) into q and
// returns its scale d = max|x|/32258, rounding like quantizeBlock (the
// 1.5*2^23 trick: |x*32258/max| is far below 2^22). A NaN in x makes d NaN,
// an infinite value makes d infinite with every q 0: either way every
// product that uses the block is NaN, as with float activations.
func quantizeBlock16(q []int16, x []float32) (d float32) {
	q = q[:len(x)]
	var amax float32
	nan := false
	for _, v := range x {
		amax = max(amax, math.Float32frombits(math.Float32bits(v)&^(1<<31)))
		nan = nan || v != v
	}
	d = amax / q16Max
	var inv float32
	if amax > 0 && !nan {
		inv = q16Max / amax
	}
	if nan {
		d = float32(math.NaN())
	}
	for i, v := range x {
		qi := int32(math.Float32bits(v*inv+roundMagic)) - roundMagicBits
		q[i] = int16(qi)
	}
	return d
}
