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

// fitGroupQ4 chooses the fp16 scale and offset of one group of weights w,
// writes its levels to q and returns the scale and offset bits. Every
// candidate is judged by the squared error of its reconstruction with the
// fp16-rounded parameters, which is what will be stored.
func fitGroupQ4(q []uint8, w []float32, mode fitMode) (scale, offset uint16) {
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
			iscale := (15 + sweepMin + sweepStep*float64(i)) / rng
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
				c.err += float64(v) * float64(v)
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
		l := max(0, min(15, math.RoundToEven(float64(v)*inv+float64(c.z))))
		d := float64(c.s*(float32(l)-c.z)) - float64(v)
		c.err += d * d
	}
	return c
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
		q[i] = uint8(max(0, min(15, math.RoundToEven(float64(v)*inv+float64(z)))))
	}
}

// leastSquares fits w ≈ a*l + b over a group and reports whether the levels
// were spread enough to determine a and b.
func leastSquares(l []float64, w []float32) (a, b float64, ok bool) {
	var sl, sw, sll, slw float64
	for i, v := range w {
		sl += l[i]
		sw += float64(v)
		sll += l[i] * l[i]
		slw += l[i] * float64(v)
	}
	n := float64(len(w))
	den := n*sll - sl*sl
	if den <= 0 {
		return 0, 0, false
	}
	a = (n*slw - sl*sw) / den
	b = (sw - a*sl) / n
	return a, b, a > 0
}
