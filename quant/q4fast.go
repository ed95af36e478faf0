package quant

import (
	"math"
)

// The fast q4 fit. It makes the same choices as fitGroupQ4Slow, bit for bit (the test
// TestQ4FitMatchesReference holds it to a frozen copy of the original), and is fast because it
// changes only how the same numbers are computed:
//
//   - The 13 candidates of the first round (the two min/max fits and the 11 sweep fits) do
//     not depend on each other, so they are computed together as 16 lanes, in the order the
//     search tries them: the loops run over the weights, and inside over the lanes, each lane
//     keeping its own sums. Each sum is still accumulated over the weights in their order,
//     with the same roundings, so every lane's error and least-squares sums are the very
//     float64 values the one-at-a-time search computes; only the latency chains are
//     interleaved. With AVX2 or AVX-512 (q4fit_amd64.s) the lanes are vector lanes.
//   - The winner is the first lane with the least error, as the strict "<" of the sequential
//     search makes it. The refit on the winner's levels takes their least-squares sums from
//     the same pass that computed the errors.
//   - A level is rounded with the 1.5*2^52 trick instead of math.RoundToEven and clamped as an
//     integer: the same round-half-even result for |x| < 2^51, which is checked per candidate
//     (a group where it could fail goes to fitGroupQ4Slow; none does in practice).
//   - A candidate's reconstruction s*(float32(l)-z) takes 16 values, so the Go kernel
//     tabulates it per candidate instead of computing it per weight.

// roundMagic is 1.5*2^52: adding it to a float64 x with |x| < 2^51 leaves round(x) (half to
// even, the hardware's rounding) in the low bits of the sum's mantissa, so
// int64(bits(x+roundMagic)) - roundMagicBits is math.RoundToEven(x) as an integer.
const roundMagic = 0x1.8p52

// roundMagicBits is the float64 bit pattern of roundMagic.
const roundMagicBits = 0x4338000000000000

// maxLevelArg bounds |w*inv + z| for the integer rounding (which needs |x| < 2^51) with room
// for the rounding of the bound itself.
const maxLevelArg = 0x1p50

// The lanes of the first round: lane 0 is the min/max fit of the range widened to include 0,
// lane 1 the plain min/max fit, lanes 2..12 the sweep, lanes 13..15 unused (never valid).
const (
	laneSweep = 2  // the lane of sweep candidate 0
	sumsLanes = 18 // lanes per array of q4Fit.sums (the AVX-512 sweep writes lanes 2..17)
)

// The kernel sets of the fast fit, best last.
const (
	q4Go = iota
	q4AVX2
	q4AVX512
)

// q4Kernels selects the kernels of the fast fit: the best the CPU has (q4Best), or lower for
// the tests, which run every level on the same data.
var q4Kernels = q4Best

// useQ8Asm selects the q8 assembly kernels where the CPU has them; the tests turn it off to run
// the Go code on the same data.
var useQ8Asm = hasQ8Asm

// q4Fit is the working memory of the fast fit of one group (at most 128 weights). The row
// quantizer keeps one for all its groups, so fitting allocates and clears nothing per group.
type q4Fit struct {
	wd [128]float64 // the weights as float64

	is     [16]float64 // the sweep's inverse scales, is[i] for sweep candidate i (is[11:] = 0)
	direct [4]float64  // a and b of lanes 0 and 1: a0, a1, b0, b1

	// The lanes' sums of l, l*l and l*w, three arrays of sumsLanes: from the sweep (its
	// levels), then from the evaluation (the levels under the rounded candidate).
	sums [3 * sumsLanes]float64

	// The lanes' rounded candidates: 1/s and z as float64, s and z as float32, the fp16 bits
	// scale | offset<<16, and after the evaluation their squared errors.
	inv, z [16]float64
	sf, zf [16]float32
	bits   [16]uint32
	errs   [16]float64

	// The refit's single candidate in lane 0 of vectors of 16 (lanes 1..15 stay 0), for the
	// one-vector assembly kernel.
	rinv, rz   [16]float64
	rsf, rzf   [16]float32
	rerrs      [16]float64
	recon      [16][16]float64 // Go kernel: float64(s*(float32(l)-z)) per lane and level
	sl, sll    [16]int64       // Go kernels' integer sums
	slw, errGo [16]float64     // Go kernels' float sums
}

// fit is fitGroup(data, w, fitBest) for the groups it handles, reporting ok; it declines
// (ok false) a constant group, a group whose size is not a power of 2 (the least squares
// multiply by 1/n), and a group where some candidate's levels could exceed the integer
// rounding's range, which fitGroupQ4Slow then fits.
func (f *q4Fit) fit(data []byte, w []float32) (scale, offset uint16, ok bool) {
	n := len(w)
	if n&(n-1) != 0 || n < 8 || n > len(f.wd) {
		return 0, 0, false
	}
	wd := f.wd[:n]
	var lo, hi float32
	if q4Kernels >= q4AVX2 {
		lo, hi = q4PrologueAVX2(w, wd)
	} else {
		lo, hi = minMaxF32(w)
		for j, v := range w {
			wd[j] = float64(v)
		}
	}
	if !(hi > lo) {
		return 0, 0, false
	}
	lim := max(math.Abs(float64(lo)), math.Abs(float64(hi)))
	fn := float64(n)

	// Round 1: the min/max fits and the sweep, as lanes.
	l, h := min(lo, 0), max(hi, 0)
	f.direct = [4]float64{float64(h-l) / 15, float64(hi-lo) / 15, float64(l), float64(lo)}
	sw := f.sweep(n, float64(lo), float64(hi)-float64(lo))
	valid, risky := f.prep(sw, fn, lim)
	if risky != 0 {
		return 0, 0, false
	}
	if valid == 0 {
		// No candidate survived the fp16 rounding: the slow search keeps its zero candidate,
		// whose levels are all 0, and the refit on them is degenerate.
		clear(data)
		return 0, 0, true
	}
	best := f.eval(n, valid)
	berr := f.errs[best]
	scale, offset = uint16(f.bits[best]), uint16(f.bits[best]>>16)
	inv, z := f.inv[best], f.z[best]

	// Round 2: the refit on the winner's levels.
	if a, b, lsOK := solveLSPow2(fn, 1/fn, f.sums[best], sw, f.sums[sumsLanes+best], f.sums[2*sumsLanes+best]); lsOK && a < math.Inf(1) {
		r := candidate{}
		r.scale, r.offset, r.s, r.z = roundCandidate(a, b)
		if r.s != 0 && !math.IsInf(float64(r.s), 0) && !math.IsInf(float64(r.z), 0) &&
			(r.s != f.sf[best] || r.z != f.zf[best]) { // the same fit has the same error: no better
			rinv, rz := 1/float64(r.s), float64(r.z)
			if !(float64(lim*rinv)+math.Abs(rz) < maxLevelArg) {
				return 0, 0, false
			}
			if f.evalOne(n, r.s, r.z, rinv, rz) < berr {
				scale, offset, inv, z = r.scale, r.offset, rinv, rz
			}
		}
	}
	if q4Kernels >= q4AVX2 {
		q4LevelsAVX2(wd, inv, z, data)
		return scale, offset, true
	}
	level := func(x float64) byte {
		return byte(min(max(int64(math.Float64bits(float64(x*inv)+z+roundMagic))-roundMagicBits, 0), 15))
	}
	for j := 0; j < n; j += 2 {
		data[j/2] = level(wd[j]) | level(wd[j+1])<<4
	}
	return scale, offset, true
}

// sweep sets f.is[i] = sweepNum[i]/rng and lanes laneSweep+i of f.sums to the sums over the
// group of l, l*l and l*w, where l = min(15, round(f.is[i]*(w-lo))) is the weight's level for
// inverse scale i, and returns the sum of the weights. l*w and w are summed in the weights'
// order, like leastSquares; the other two are sums of small integers, exact in any order.
func (f *q4Fit) sweep(n int, lo, rng float64) (sw float64) {
	switch q4Kernels {
	case q4AVX512:
		return q4SweepAVX512(f.wd[:n], lo, rng, &sweepNum, &f.is, &f.sums)
	case q4AVX2:
		return q4SweepAVX2(f.wd[:n], lo, rng, &sweepNum, &f.is, &f.sums)
	}
	for i := range sweepSteps + 1 {
		f.is[i] = sweepNum[i] / rng
	}
	var sl, sll [sweepSteps + 1]int64
	var slw [sweepSteps + 1]float64
	is := (*[sweepSteps + 1]float64)(f.is[:])
	for _, x := range f.wd[:n] {
		d := x - lo
		sw += x
		for i, s := range is {
			l := min(int64(math.Float64bits(float64(d*s)+roundMagic))-roundMagicBits, 15)
			sl[i] += l
			sll[i] += l * l
			slw[i] += float64(float64(l) * x)
		}
	}
	for i := range is {
		c := laneSweep + i
		f.sums[c], f.sums[sumsLanes+c], f.sums[2*sumsLanes+c] = float64(sl[i]), float64(sll[i]), slw[i]
	}
	return sw
}

// prep rounds the 16 lanes' fits to candidates (q4PrepAVX2 has the details): lanes 0 and 1
// from f.direct, the sweep lanes by least squares from their sums. It returns the mask of the
// valid lanes (those the slow search would evaluate) and of the valid lanes whose levels could
// exceed the integer rounding's range.
func (f *q4Fit) prep(sw, n, lim float64) (valid, risky uint32) {
	if q4Kernels >= q4AVX2 {
		return q4PrepAVX2(&f.sums, &f.direct, sw, n, 1/n, lim, &f.inv, &f.z, &f.sf, &f.zf, &f.bits)
	}
	for c := range 16 {
		// An invalid lane gets the parameters the assembly gives it (see q4PrepAVX2).
		f.inv[c], f.z[c], f.sf[c], f.zf[c] = 0, 0, float32(math.Inf(1)), -1
		if c > laneSweep+sweepSteps {
			continue // lanes 13..15 hold no candidate
		}
		var a, b float64
		switch c {
		case 0, 1:
			a, b = f.direct[c], f.direct[2+c]
		default:
			var lsOK bool
			a, b, lsOK = solveLS(n, f.sums[c], sw, f.sums[sumsLanes+c], f.sums[2*sumsLanes+c])
			if !lsOK {
				continue
			}
		}
		if !(a > 0) || math.IsInf(a, 0) {
			continue
		}
		var cd candidate
		cd.scale, cd.offset, cd.s, cd.z = roundCandidate(a, b)
		if cd.s == 0 || math.IsInf(float64(cd.s), 0) || math.IsInf(float64(cd.z), 0) {
			continue
		}
		f.inv[c], f.z[c], f.sf[c], f.zf[c] = 1/float64(cd.s), float64(cd.z), cd.s, cd.z
		f.bits[c] = uint32(cd.scale) | uint32(cd.offset)<<16
		valid |= 1 << c
		if !(float64(lim*f.inv[c])+math.Abs(f.z[c]) < maxLevelArg) {
			risky |= 1 << c
		}
	}
	return valid, risky
}

// eval sets, for the valid lanes c, f.errs[c] to the squared error of the reconstruction of the
// group under lane c's rounded candidate, each weight taking its nearest level, summed in the
// weights' order like evalQ4, and lane c of f.sums to the sums of those levels l, l*l and l*w
// (the refit's least squares), and returns the first lane with the least error: the winner of
// the sequential search, whose "<" keeps the earliest of equal errors. The assembly computes
// invalid lanes too; prep set them up to have an infinite error, so they never win.
func (f *q4Fit) eval(n int, valid uint32) (best int) {
	switch q4Kernels {
	case q4AVX512:
		return int(q4EvalAVX512(f.wd[:n], &f.inv, &f.z, &f.sf, &f.zf, &f.errs, &f.sums))
	case q4AVX2:
		return int(q4EvalAVX2(f.wd[:n], &f.inv, &f.z, &f.sf, &f.zf, &f.errs, &f.sums))
	}
	var lanes [16]uint8
	k := 0
	for c := range 16 {
		if valid>>c&1 != 0 {
			lanes[k] = uint8(c)
			k++
			for l := range f.recon[c] {
				f.recon[c][l] = float64(f.sf[c] * (float32(l) - f.zf[c]))
			}
			f.sl[c], f.sll[c], f.slw[c], f.errGo[c] = 0, 0, 0, 0
		}
	}
	for _, x := range f.wd[:n] {
		for _, c := range lanes[:k] {
			c &= 15
			l := min(max(int64(math.Float64bits(float64(x*f.inv[c])+f.z[c]+roundMagic))-roundMagicBits, 0), 15)
			d := f.recon[c][l&15] - x
			f.errGo[c] += float64(d * d)
			f.sl[c] += l
			f.sll[c] += l * l
			f.slw[c] += float64(float64(l) * x)
		}
	}
	best, berr := -1, math.Inf(1)
	for _, c := range lanes[:k] {
		f.errs[c] = f.errGo[c]
		f.sums[c], f.sums[sumsLanes+c], f.sums[2*sumsLanes+c] = float64(f.sl[c]), float64(f.sll[c]), f.slw[c]
		if f.errs[c] < berr {
			best, berr = int(c), f.errs[c]
		}
	}
	return best
}

// evalOne returns the squared error of the group's reconstruction under one candidate (s, z
// its values, inv = 1/s, zd = z as float64), as eval computes it for a lane.
func (f *q4Fit) evalOne(n int, s, z float32, inv, zd float64) float64 {
	if q4Kernels >= q4AVX2 {
		f.rinv[0], f.rz[0], f.rsf[0], f.rzf[0] = inv, zd, s, z
		q4Eval1AVX2(f.wd[:n], &f.rinv, &f.rz, &f.rsf, &f.rzf, &f.rerrs)
		return f.rerrs[0]
	}
	var recon [16]float64
	for l := range recon {
		recon[l] = float64(s * (float32(l) - z))
	}
	var e float64
	for _, x := range f.wd[:n] {
		l := min(max(int64(math.Float64bits(float64(x*inv)+zd+roundMagic))-roundMagicBits, 0), 15)
		d := recon[l&15] - x
		e += float64(d * d)
	}
	return e
}

// minMaxF32 returns min and max of w (finite, not empty) exactly as the builtins min and max
// would, signed zeros included (-0 is below +0), but without their NaN handling, which costs
// more than the comparison itself. It compares the bits mapped to integers in the order of
// the floats they encode.
func minMaxF32(w []float32) (lo, hi float32) {
	key := func(v float32) int32 {
		b := int32(math.Float32bits(v))
		return b ^ (b >> 31 & 0x7fffffff) // negative floats: reverse the order of their bits
	}
	kl := key(w[0])
	kh := kl
	for _, v := range w[1:] {
		k := key(v)
		kl, kh = min(kl, k), max(kh, k)
	}
	unkey := func(k int32) float32 { return math.Float32frombits(uint32(k ^ (k >> 31 & 0x7fffffff))) }
	return unkey(kl), unkey(kh)
}
