package quant

import (
	"math"

	"github.com/anepack/anepack/half"
)

// This file keeps the q4 fit as it was before the fast fit (commit 2500f7d), as the oracle the
// fast fit must reproduce bit for bit: same scale, offset and levels for every group. It is
// test code only; do not "improve" it. The one change: products that are then added are
// converted to float64 explicitly, which pins the roundings to what the original computed on
// amd64 (where every bundle so far was packed). Go fuses a*b+c into one FMA on arm64, so there
// the original gave other bits; the fast fit pins the same roundings, and so packs the same
// bundle on every platform.

func refFitGroupQ4(q []uint8, w []float32) (scale, offset uint16) {
	lo, hi := w[0], w[0]
	for _, v := range w[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	best := refCandidate{err: math.Inf(1)}
	try := func(a, b float64) { // w ≈ a*level + b
		if c := refEvalQ4(w, a, b); c.err < best.err {
			best = c
		}
	}
	{
		l, h := min(lo, 0), max(hi, 0)
		try(float64(h-l)/15, float64(l))
	}
	if hi > lo {
		try(float64(hi-lo)/15, float64(lo))
	}
	var lv [128]float64
	if hi > lo {
		rng := float64(hi) - float64(lo)
		for i := 0; i <= sweepSteps; i++ {
			iscale := (15 + sweepMin + float64(sweepStep*float64(i))) / rng
			for j, v := range w {
				lv[j] = max(0, min(15, math.RoundToEven(iscale*(float64(v)-float64(lo)))))
			}
			if a, b, ok := refLeastSquares(lv[:len(w)], w); ok {
				try(a, b)
			}
		}
		refLevelsQ4(q, w, best.s, best.z)
		for j := range w {
			lv[j] = float64(q[j])
		}
		if a, b, ok := refLeastSquares(lv[:len(w)], w); ok {
			try(a, b)
		}
	}
	refLevelsQ4(q, w, best.s, best.z)
	return best.scale, best.offset
}

type refCandidate struct {
	scale, offset uint16
	s, z          float32
	err           float64
}

func refEvalQ4(w []float32, a, b float64) refCandidate {
	var c refCandidate
	if !(a > 0) || math.IsInf(a, 0) {
		c.err = math.Inf(1)
		if a == 0 {
			c.err = 0
			for _, v := range w {
				c.err += float64(float64(v) * float64(v))
			}
		}
		return c
	}
	c.scale = half.F32ToF16Scalar(float32(a))
	c.offset = half.F32ToF16Scalar(float32(-b / a))
	c.s = half.F16ToF32Scalar(c.scale)
	c.z = half.F16ToF32Scalar(c.offset)
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

func refLevelsQ4(q []uint8, w []float32, s, z float32) {
	if s == 0 {
		clear(q[:len(w)])
		return
	}
	inv := 1 / float64(s)
	for i, v := range w {
		q[i] = uint8(max(0, min(15, math.RoundToEven(float64(float64(v)*inv)+float64(z)))))
	}
}

func refLeastSquares(l []float64, w []float32) (a, b float64, ok bool) {
	var sl, sw, sll, slw float64
	for i, v := range w {
		sl += l[i]
		sw += float64(v)
		sll += float64(l[i] * l[i])
		slw += float64(l[i] * float64(v))
	}
	n := float64(len(w))
	den := float64(n*sll) - float64(sl*sl)
	if den <= 0 {
		return 0, 0, false
	}
	a = (float64(n*slw) - float64(sl*sw)) / den
	b = (sw - float64(a*sl)) / n
	return a, b, a > 0
}

// refQuantizeRowQ8 is QuantizeRowQ8 as it was before the fast row quantizer (commit 2500f7d),
// the oracle TestQ8MatchesReference holds it to.
func refQuantizeRowQ8(q []int8, w []float32) uint16 {
	var amax float32
	for _, v := range w {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	sb := half.F32ToF16Scalar(amax / 127)
	s := float64(half.F16ToF32Scalar(sb))
	if s == 0 {
		clear(q)
		return 0
	}
	for i, v := range w {
		q[i] = int8(max(-127, min(127, math.RoundToEven(float64(v)/s))))
	}
	return sb
}
