package quant

import (
	"math"

	"github.com/anepack/anepack/half"
)

// The weighted fits behind q4k, q6k and the importance-aware q4. Each minimises a weighted
// squared error Σ w_i (x̂_i − x_i)², where w_i says how much an error in weight i costs the
// layer's output (kWeights). Every sum is accumulated in float64 from products that are exact
// there (a float32 times a float32, times a level of a few bits), or from products rounded by
// an explicit conversion, so that no fused multiply-add can change a result: a bundle packed
// on arm64 (where Go fuses a*b+c) is the one packed on amd64.

// kScratch holds one super-block's working arrays, so that quantizing a row allocates nothing.
type kScratch struct {
	w [SuperBlock]float32 // the weight of each input's error
	l [SuperBlock]int8    // levels (q4k: 0..15; q6k: -32..31)
	t [SuperBlock]int8    // trial levels of a refinement
}

// kWeights sets w[i] to the weight of x[i]'s squared error: the importance of its input column
// (the mean square of the activations that multiply it, from calibration; 1 without), times
// sqrt(σ² + x[i]²) with σ² twice the mean square of x. The importance is what the layer's output
// error is made of: Σ_c Δw_c² E[a_c²] when the inputs are uncorrelated. The second factor leans
// the fit towards the larger weights of the block, which llama.cpp's K-quants found to lower
// perplexity further (its quantize_row_q4_K_impl uses the same form).
func kWeights(w, x, imp []float32) {
	var s2 float64
	for _, v := range x {
		s2 += float64(v) * float64(v) // exact
	}
	sigma2 := float32(2 * s2 / float64(len(x)))
	for i, v := range x {
		f := float32(math.Sqrt(float64(sigma2 + float32(v*v))))
		if imp != nil {
			f = imp[i] * f
		}
		w[i] = f
	}
}

// roundLevel returns the integer nearest v (halves away from zero), clamped to [lo, hi].
func roundLevel(v float32, lo, hi int32) int32 {
	var l int32
	if v >= 0 {
		l = int32(min(v+0.5, 1<<30))
	} else {
		l = -int32(min(0.5-v, 1<<30))
	}
	return max(lo, min(hi, l))
}

// The sweep of fitAffine: inverse scales (nmax + affineLo + affineStep·k)/(max − min) for
// k = 0..affineSteps. On trained-like weights (TestKQuantAccuracy's) 37 steps of 0.05 from
// −0.9, as llama.cpp's make_qkx3_quants sweeps, lowered the output error by under 1% against
// these 5, for seven times the work.
const (
	affineLo    = -0.5
	affineStep  = 0.25
	affineSteps = 4
)

// fitAffine fits x ≈ scale·l + offset over integer levels l in [0, nmax], minimising
// Σ w (scale·l + offset − x)² (len(x) a multiple of 4, at most 128). With nonPositive the
// offset is kept <= 0 (q4k's sub-block "min" is stored as a non-negative number subtracted).
// The candidates, in the manner of llama.cpp's make_qkx3_quants: the min/max fit, then the
// sweep's inverse scales, each inducing levels to which a weighted least-squares fit of scale
// and offset is refined; the one of least error wins. It also returns Σ w l² and Σ w at the winner's
// levels: how much an error in the scale and in the offset cost, for quantizing them next.
func fitAffine(x, w []float32, nmax int32, nonPositive bool) (scale, offset float32, wl2, sw float64) {
	lo, hi := x[0], x[0]
	var sx, sx2 float64
	for i, v := range x {
		lo, hi = min(lo, v), max(hi, v)
		wx := float64(w[i]) * float64(v) // exact
		sw += float64(w[i])
		sx += wx
		sx2 += float64(wx * float64(v))
	}
	if nonPositive && lo > 0 {
		lo = 0
	}
	if !(hi > lo) {
		return 0, lo, 0, sw
	}
	// The candidates differ only in the inverse scale: the distances from the minimum, the
	// weights and the weighted values are computed once.
	var xsBuf [128]float32
	var wBuf, wxBuf [128]float64
	xs, wf, wxf := xsBuf[:len(x)], wBuf[:len(x)], wxBuf[:len(x)]
	for i, v := range x {
		xs[i] = v - lo
		wf[i] = float64(w[i])
		wxf[i] = float64(w[i]) * float64(v) // exact
	}
	// err is Σ w (s·l + m − x)² from the sums of one leveling.
	err := func(s, m, sl, sl2, slx float64) float64 {
		return float64(s*s*sl2) + float64(m*m*sw) + sx2 + float64(2*s*m*sl) - float64(2*s*slx) - float64(2*m*sx)
	}
	span := hi - lo
	best := math.Inf(1)
	for k := -1; k <= affineSteps; k++ {
		var inv float32
		if k < 0 {
			inv = float32(nmax) / span // the min/max fit
		} else {
			inv = (float32(nmax) + affineLo + affineStep*float32(k)) / span
		}
		// Four chains of sums (len(x) is a multiple of 4), so that the additions overlap.
		var sl4, sl24, slx4 [4]float64
		for i := 0; i < len(xs); i += 4 {
			for j := 0; j < 4; j++ {
				// d·inv >= 0: truncating d·inv + 0.5 rounds it (halves up)
				fl := float64(min(int32(xs[i+j]*inv+0.5), nmax))
				wl := wf[i+j] * fl // exact: a float32 times a few bits
				sl4[j] += wl
				sl24[j] += wl * fl
				slx4[j] += wxf[i+j] * fl // w·x is exact (48 bits), and so is its product by l
			}
		}
		sl := (sl4[0] + sl4[1]) + (sl4[2] + sl4[3])
		sl2 := (sl24[0] + sl24[1]) + (sl24[2] + sl24[3])
		slx := (slx4[0] + slx4[1]) + (slx4[2] + slx4[3])
		var s, m float64
		if k < 0 {
			s, m = float64(span)/float64(nmax), float64(lo)
		} else {
			det := float64(sw*sl2) - float64(sl*sl)
			if !(det > 0) {
				continue
			}
			s = (float64(sw*slx) - float64(sx*sl)) / det
			m = (float64(sl2*sx) - float64(sl*slx)) / det
			if nonPositive && m > 0 {
				m, s = 0, slx/sl2
			}
			if !(s > 0) {
				continue
			}
		}
		if e := err(s, m, sl, sl2, slx); e < best {
			best, scale, offset, wl2 = e, float32(s), float32(m), sl2
		}
	}
	return scale, offset, wl2, sw
}

// symSteps is the sweep of fitSymmetric.
const symSteps = 8

// fitSymmetric fits x ≈ scale·l over integer levels l in [−nmax, nmax−1], minimising
// Σ w (scale·l − x)²: inverse scales −(nmax − 0.4 + 0.1k)/x_m for k = 0..symSteps, x_m the value
// of largest magnitude (so that it takes the level −nmax, the side with one more step), each
// refined by weighted least squares; the candidate of least error wins. It also returns Σ w l²
// at the winner's levels.
func fitSymmetric(x, w []float32, nmax int32) (scale float32, wl2 float64) {
	var xm float32
	for _, v := range x {
		if abs32(v) > abs32(xm) {
			xm = v
		}
	}
	if xm == 0 {
		return 0, 0
	}
	bestGain := -1.0 // the error is Σwx² − slx²/sl2: the largest slx²/sl2 wins
	for k := 0; k <= symSteps; k++ {
		inv := -(float32(nmax) - 0.4 + 0.1*float32(k)) / xm
		var sl2, slx float64
		for i, v := range x {
			l := float64(roundLevel(v*inv, -nmax, nmax-1))
			sl2 += float64(w[i]) * l * l                 // exact: 24 + 2·6 bits
			slx += float64(float64(w[i])*float64(v)) * l // w·x exact (48 bits), times 6 bits: exact
		}
		if !(sl2 > 0) {
			continue
		}
		if g := float64(slx*slx) / sl2; g > bestGain {
			bestGain, scale, wl2 = g, float32(slx/sl2), sl2
		}
	}
	if bestGain < 0 { // every weight zero: any scale reproduces x
		return float32(-1 / (float32(nmax) / xm)), 0
	}
	return scale, wl2
}

// fitLevels quantizes the positive-or-zero values v (sub-block scales or mins) to levels in
// [0, nmax] times a common fp16 step d, minimising Σ c (v − d·l)² with d the stored (fp16)
// value: steps v_max/(nmax + 0.1k) for k = −4..4, then a least-squares step on the best levels.
// It returns the step's fp16 bits and the levels.
func fitLevels(v []float32, c []float64, nmax int32, levels []uint8) uint16 {
	var vmax float32
	for _, x := range v {
		vmax = max(vmax, x)
	}
	for i := range levels {
		levels[i] = 0
	}
	if !(vmax > 0) {
		return 0
	}
	try := func(d uint16, out []uint8) float64 {
		df := half.F16ToF32Scalar(d)
		var e float64
		for i, x := range v {
			l := int32(0)
			if df > 0 {
				l = roundLevel(x/df, 0, nmax)
			}
			out[i] = uint8(l)
			r := float64(x - df*float32(l))
			e += float64(c[i] * r * r)
		}
		return e
	}
	var tmp [16]uint8
	best, bd := math.Inf(1), uint16(0)
	for k := -4; k <= 4; k++ {
		d := f16Positive(vmax / (float32(nmax) + 0.1*float32(k)))
		if e := try(d, tmp[:len(v)]); e < best {
			best, bd = e, d
			copy(levels, tmp[:len(v)])
		}
	}
	// Least squares for the step on the winner's levels.
	var slv, sll float64
	for i, x := range v {
		l := float64(levels[i])
		slv += float64(c[i] * l * float64(x))
		sll += float64(c[i] * l * l)
	}
	if sll > 0 {
		if d := f16Positive(float32(slv / sll)); d != bd {
			if e := try(d, tmp[:len(v)]); e < best {
				bd = d
				copy(levels, tmp[:len(v)])
			}
		}
	}
	return bd
}

// f16Positive rounds a positive step to fp16, keeping it finite (a step past fp16's range
// becomes its largest value, and the levels clamp).
func f16Positive(x float32) uint16 {
	h := half.F32ToF16Scalar(x)
	if h&0x7fff >= 0x7c00 {
		return 0x7bff
	}
	return h
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
