package quant

import (
	"math"

	"github.com/anepack/anepack/half"
)

// fitMode selects how fitGroupQ4 chooses a group's scale and offset.
type fitMode int

const (
	fitMinMax     fitMode = iota // the group's min and max map to levels 0 and 15
	fitMinMaxZero                // the same on the range widened to include 0
	fitBest                      // the best of both and of the refined sweep
)

// The candidate sweep of fitBest, as in llama.cpp's make_qkx2_quants: the
// inverse scale (levels per unit) runs over (15 + sweepMin + sweepStep*i) /
// (max - min) for i = 0..sweepSteps, each candidate is refined by a
// least-squares fit, and the one with the least squared error wins.
const (
	sweepMin   = -1.0
	sweepStep  = 0.2
	sweepSteps = 10
)

// sweepNum holds the numerators 15 + sweepMin + sweepStep*i of the sweep's inverse scales,
// computed once at run time the way the original loop computed them (a constant expression
// would be folded exactly, which can differ in the last bit).
// The lanes past sweepSteps are 0, for the vector kernels (their inverse scale is then 0).
var sweepNum = func() (n [16]float64) {
	for i := range sweepSteps + 1 {
		n[i] = (15 + sweepMin) + float64(sweepStep*float64(i))
	}
	return n
}()

// fitGroupQ4 chooses the fp16 scale and offset of one group of weights w (at most 128, an even
// count), writes its levels to q and returns the scale and offset bits. Every candidate is
// judged by the squared error of its reconstruction with the fp16-rounded parameters, which is
// what will be stored.
func fitGroupQ4(q []uint8, w []float32, mode fitMode) (scale, offset uint16) {
	var f q4Fit
	var data [64]byte
	scale, offset = f.fitGroup(data[:len(w)/2], w, mode)
	for i := range w {
		q[i] = data[i/2] >> (4 * (i & 1)) & 15
	}
	return scale, offset
}

// fitGroup is fitGroupQ4 writing the levels packed as the q4 data section stores them (two to
// a byte, element 2k in the low nibble of byte k) into data (len(w)/2 bytes), with f as the
// working memory of the fast path. fitBest takes the fast path (q4Fit.fit) for every group it
// can handle and the candidate-at-a-time search (fitGroupQ4Slow) otherwise; both give the same
// bits.
func (f *q4Fit) fitGroup(data []byte, w []float32, mode fitMode) (scale, offset uint16) {
	if mode == fitBest {
		if s, z, ok := f.fit(data, w); ok {
			return s, z
		}
	}
	var q [128]uint8
	scale, offset = fitGroupQ4Slow(q[:len(w)], w, mode)
	for i := 0; i < len(w); i += 2 {
		data[i/2] = q[i] | q[i+1]<<4
	}
	return scale, offset
}

// fitGroupQ4Slow is the q4 fit written the straightforward way, one candidate at a time: the
// definition the fast path reproduces bit for bit, and the path for the groups the fast one
// declines (constant groups, and ranges so extreme that its integer rounding could overflow).
//
// Products that are then added are converted to float64 explicitly: Go may fuse a*b+c into
// one FMA (it does on arm64), which rounds once instead of twice and would make the fit, and
// so the bundle, depend on the machine that packed it.
func fitGroupQ4Slow(q []uint8, w []float32, mode fitMode) (scale, offset uint16) {
	lo, hi := w[0], w[0]
	for _, v := range w[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	best := candidate{err: math.Inf(1)}
	try := func(a, b float64) { // w ≈ a*level + b
		if c := evalQ4(w, a, b); c.err < best.err {
			best = c
		}
	}
	if mode != fitMinMax || hi == lo {
		// Including 0 keeps the offset in [0, 15], where fp16 is exact to
		// 1/64, and is the only sane fit of a constant group.
		l, h := min(lo, 0), max(hi, 0)
		try(float64(h-l)/15, float64(l))
	}
	if mode != fitMinMaxZero && hi > lo {
		try(float64(hi-lo)/15, float64(lo))
	}
	var lv [128]float64
	if mode == fitBest && hi > lo {
		rng := float64(hi) - float64(lo)
		for i := 0; i <= sweepSteps; i++ {
			iscale := sweepNum[i] / rng
			for j, v := range w {
				lv[j] = max(0, min(15, math.RoundToEven(iscale*(float64(v)-float64(lo)))))
			}
			if a, b, ok := leastSquares(lv[:len(w)], w); ok {
				try(a, b)
			}
		}
		// One more refit on the winner's own levels.
		levelsQ4(q, w, best.s, best.z)
		for j := range w {
			lv[j] = float64(q[j])
		}
		if a, b, ok := leastSquares(lv[:len(w)], w); ok {
			try(a, b)
		}
	}
	levelsQ4(q, w, best.s, best.z)
	return best.scale, best.offset
}

// candidate is one (scale, offset) fit of a group: the stored bits, their values, and the
// squared error of the reconstruction. The levels are computed only for the winner.
type candidate struct {
	scale, offset uint16
	s, z          float32
	err           float64
}

// evalQ4 rounds w ≈ a*level + b to the stored form scale*(q - offset) with
// fp16 scale = a and offset = -b/a and returns the squared error of each weight's
// nearest level under those rounded parameters.
func evalQ4(w []float32, a, b float64) candidate {
	var c candidate
	if !(a > 0) || math.IsInf(a, 0) {
		c.err = math.Inf(1)
		if a == 0 {
			// Only an all-zero group fits a zero scale exactly.
			c.err = 0
			for _, v := range w {
				c.err += float64(float64(v) * float64(v))
			}
		}
		return c
	}
	c.scale, c.offset, c.s, c.z = roundCandidate(a, b)
	if c.s == 0 || math.IsInf(float64(c.s), 0) || math.IsInf(float64(c.z), 0) {
		c.err = math.Inf(1)
		return c
	}
	inv := 1 / float64(c.s)
	for _, v := range w {
		l := max(0, min(15, math.RoundToEven(float64(float64(v)*inv)+float64(c.z))))
		d := float64(c.s*(float32(l)-c.z)) - float64(v)
		c.err += float64(d * d)
	}
	return c
}

// roundCandidate rounds w ≈ a*level + b to what is stored: the fp16 bits of scale = a and
// offset = -b/a, and their values.
func roundCandidate(a, b float64) (scale, offset uint16, s, z float32) {
	scale, s = roundF16(float32(a))
	offset, z = roundF16(float32(-b / a))
	return scale, offset, s, z
}

// roundF16 rounds f to fp16 (to nearest, ties to even) and returns the bits and their value:
// half.F32ToF16Scalar and half.F16ToF32Scalar, with the common case (f in fp16's normal range)
// done inline on the float32 bits, since the fit rounds two numbers per candidate.
func roundF16(f float32) (uint16, float32) {
	b := math.Float32bits(f)
	if a := b & 0x7fffffff; a-0x38800000 < 0x47800000-0x38800000 { // 2^-14 <= |f| < 2^16
		// Round the mantissa to 10 bits, half to even; a carry moves into the exponent.
		r := (b + 0xfff + b>>13&1) &^ 0x1fff
		if r&0x7fffffff <= 0x477fe000 { // at most 65504, fp16's largest finite value
			return uint16(r>>16)&0x8000 | uint16((r&0x7fffffff-0x38000000)>>13), math.Float32frombits(r)
		}
	}
	h := half.F32ToF16Scalar(f)
	return h, half.F16ToF32Scalar(h)
}

// levelsQ4 writes each weight's nearest level under scale s and offset z (zero for a zero
// scale: the all-zero group).
func levelsQ4(q []uint8, w []float32, s, z float32) {
	if s == 0 {
		clear(q[:len(w)])
		return
	}
	inv := 1 / float64(s)
	for i, v := range w {
		q[i] = uint8(max(0, min(15, math.RoundToEven(float64(float64(v)*inv)+float64(z)))))
	}
}

// leastSquares fits w ≈ a*l + b over a group and reports whether the levels
// were spread enough to determine a and b.
func leastSquares(l []float64, w []float32) (a, b float64, ok bool) {
	var sl, sw, sll, slw float64
	for i, v := range w {
		sl += l[i]
		sw += float64(v)
		sll += float64(l[i] * l[i])
		slw += float64(l[i] * float64(v))
	}
	return solveLS(float64(len(w)), sl, sw, sll, slw)
}

// solveLS solves the normal equations of w ≈ a*l + b over n weights from the sums of l, w,
// l*l and l*w, and reports whether the levels were spread enough to determine a and b (and
// gave a positive scale).
func solveLS(n, sl, sw, sll, slw float64) (a, b float64, ok bool) {
	den := float64(n*sll) - float64(sl*sl)
	if den <= 0 {
		return 0, 0, false
	}
	a = (float64(n*slw) - float64(sl*sw)) / den
	b = (sw - float64(a*sl)) / n
	return a, b, a > 0
}

// solveLSPow2 is solveLS for a power of 2 n with invn = 1/n: dividing by n is then an exact
// scaling, so multiplying by 1/n gives the same, correctly rounded, b.
func solveLSPow2(n, invn, sl, sw, sll, slw float64) (a, b float64, ok bool) {
	den := float64(n*sll) - float64(sl*sl)
	if den <= 0 {
		return 0, 0, false
	}
	a = (float64(n*slw) - float64(sl*sw)) / den
	b = (sw - float64(a*sl)) * invn
	return a, b, a > 0
}
