package quant

import (
	"math"
)

// The fast q4 fit. It makes the same choices as fitGroupQ4Slow, bit for bit (the test
// TestQ4FitMatchesReference holds it to a frozen copy of the original), and is fast because it
// changes only how the same numbers are computed:
//
//   - The candidates of one round are independent, so they are evaluated together: the loops
//     run over the weights, and inside over the candidates, each candidate keeping its own sums.
//     Each sum is still accumulated over the weights in their order, with the same roundings,
//     so every candidate's error and least-squares sums are the very float64 values the
//     one-at-a-time search computes; only the latency chains are interleaved (and, with SIMD,
//     the candidates are the vector lanes).
//   - A level is rounded with the 1.5*2^52 trick instead of math.RoundToEven and clamped as an
//     integer: the same round-half-even result for |x| < 2^51, which fit checks per candidate.
//   - A candidate's reconstruction s*(float32(l)-z) takes 16 values, so it is tabulated per
//     candidate instead of being computed per weight.
//   - A candidate whose rounded (scale, offset) equals an earlier one's has the same error, so
//     it can not win (a later candidate must be strictly better) and is not evaluated.
//   - The refit on the winner's levels reuses the levels pass that writes them.

// roundMagic is 1.5*2^52: adding it to a float64 x with |x| < 2^51 leaves round(x) (half to
// even, the hardware's rounding) in the low bits of the sum's mantissa, so
// int64(bits(x+roundMagic)) - roundMagicBits is math.RoundToEven(x) as an integer.
const roundMagic = 0x1.8p52

// roundMagicBits is the float64 bit pattern of roundMagic.
const roundMagicBits = 0x4338000000000000

// maxLevelArg bounds |w*inv + z| for the integer rounding (which needs |x| < 2^51) with room
// for the rounding of the bound itself.
const maxLevelArg = 0x1p50

// q4MaxCands is the most candidates of one round: two min/max fits and the sweep.
const q4MaxCands = 2 + sweepSteps + 1

// useQ4Asm and useQ8Asm select the assembly kernels (q4fit_amd64.s) where the CPU has them;
// the tests turn them off to run the Go code on the same data.
var useQ4Asm, useQ8Asm = hasQ4Asm, hasQ8Asm

// q4Fit is the working memory of the fast fit of one group (at most 128 weights). The row
// quantizer keeps one for all its groups, so fitting allocates and clears nothing.
type q4Fit struct {
	wd [128]float64 // the weights as float64
	dl [128]float64 // wd - float64(lo), the sweep's input

	// The sweep's sums per inverse scale (lane i of 12, 11 used): levels, squared levels,
	// levels times weights, at sums[i], sums[12+i], sums[24+i].
	sums [36]float64

	// The candidates being evaluated, in the order the search tries them, and their
	// parameters as lanes of 16 (the kernels read whole vectors of 4; unused lanes are 0).
	k      int
	cand   [q4MaxCands]candidate
	inv, z [16]float64 // 1/s and the offset's value
	sf, zf [16]float32 // s and the offset's value
	errs   [16]float64

	// For the Go kernel: float64(s*(float32(l)-z)) for each candidate and level l.
	recon [q4MaxCands][16]float64
}

// fit is fitGroupQ4(q, w, fitBest) for the groups it handles, reporting ok; it declines
// (ok false, q untouched) a constant group and a group where some candidate's levels could
// exceed the integer rounding's range.
func (f *q4Fit) fit(q []uint8, w []float32) (scale, offset uint16, ok bool) {
	n := len(w)
	lo, hi := minMaxF32(w)
	if !(hi > lo) {
		return 0, 0, false
	}
	lim := max(math.Abs(float64(lo)), math.Abs(float64(hi)))
	wd, dl := f.wd[:n], f.dl[:n]
	var sw float64
	for j, v := range w {
		x := float64(v)
		wd[j] = x
		dl[j] = x - float64(lo)
		sw += x
	}

	// Round 1: the min/max fits and the sweep, in the order the slow search tries them.
	f.k = 0
	{
		l, h := min(lo, 0), max(hi, 0)
		if !f.add(float64(h-l)/15, float64(l), lim) {
			return 0, 0, false
		}
	}
	if !f.add(float64(hi-lo)/15, float64(lo), lim) {
		return 0, 0, false
	}
	rng := float64(hi) - float64(lo)
	var iscale [12]float64 // lane 11 is padding: scale 0, levels 0
	for i := range sweepSteps + 1 {
		iscale[i] = sweepNum[i] / rng
	}
	if useQ4Asm {
		f.sweepSumsAsm(&iscale, n)
	} else {
		f.sweepSums(&iscale, n)
	}
	fn := float64(n)
	for i := range sweepSteps + 1 {
		a, b, lsOK := solveLS(fn, f.sums[i], sw, f.sums[12+i], f.sums[24+i])
		if lsOK && !f.add(a, b, lim) {
			return 0, 0, false
		}
	}
	f.evalAll(n)
	bi, berr := -1, math.Inf(1)
	for c, e := range f.errs[:f.k] {
		if e < berr {
			bi, berr = c, e
		}
	}
	best := candidate{err: berr}
	if bi >= 0 {
		best = f.cand[bi]
		best.err = berr
	}
	if best.s == 0 {
		// No candidate survived the fp16 rounding: the slow search keeps its zero candidate,
		// whose levels are all 0, and the refit on them is degenerate.
		clear(q[:n])
		return best.scale, best.offset, true
	}

	// Round 2: the refit on the winner's levels, which are also the answer unless it wins.
	inv, z := 1/float64(best.s), float64(best.z)
	var sl, sll int64
	var slw float64
	for j, x := range wd {
		l := min(max(int64(math.Float64bits(float64(x*inv)+z+roundMagic))-roundMagicBits, 0), 15)
		q[j] = uint8(l)
		sl += l
		sll += l * l
		slw += float64(float64(l) * x)
	}
	a, b, lsOK := solveLS(fn, float64(sl), sw, float64(sll), slw)
	if !lsOK {
		return best.scale, best.offset, true
	}
	f.k = 0
	if !f.add(a, b, lim) {
		return 0, 0, false
	}
	if f.k == 0 {
		return best.scale, best.offset, true // rounded to nothing usable
	}
	r := f.cand[0]
	if r.s == best.s && r.z == best.z {
		return best.scale, best.offset, true // the same fit: the same error, so no better
	}
	f.evalAll(n)
	if !(f.errs[0] < best.err) {
		return best.scale, best.offset, true
	}
	inv, z = f.inv[0], f.z[0]
	for j, x := range wd {
		q[j] = uint8(min(max(int64(math.Float64bits(float64(x*inv)+z+roundMagic))-roundMagicBits, 0), 15))
	}
	return r.scale, r.offset, true
}

// add rounds the candidate w ≈ a*level + b to its stored form and queues it for evaluation,
// unless it can not win: a scale that is not positive and finite or rounds to 0 or Inf, an
// infinite offset (the slow search gives those an infinite error), or the same (s, z) as a
// candidate already queued. It returns false if the candidate's levels could leave the range
// of the integer rounding (the caller then declines the group); lim is the group's max |w|.
func (f *q4Fit) add(a, b, lim float64) bool {
	if !(a > 0) || math.IsInf(a, 0) {
		return true
	}
	var c candidate
	c.scale, c.offset, c.s, c.z = roundCandidate(a, b)
	if c.s == 0 || math.IsInf(float64(c.s), 0) || math.IsInf(float64(c.z), 0) {
		return true
	}
	for _, p := range f.cand[:f.k] {
		if p.s == c.s && p.z == c.z {
			return true
		}
	}
	inv, z := 1/float64(c.s), float64(c.z)
	if !(lim*inv+math.Abs(z) < maxLevelArg) {
		return false
	}
	k := f.k
	f.cand[k], f.inv[k], f.z[k], f.sf[k], f.zf[k] = c, inv, z, c.s, c.z
	if !useQ4Asm {
		for l := range f.recon[k] {
			f.recon[k][l] = float64(c.s * (float32(l) - c.z))
		}
	}
	f.k++
	return true
}

// evalAll sets f.errs[:f.k] (see evalErrs), with the assembly kernel where there is one.
func (f *q4Fit) evalAll(n int) {
	if !useQ4Asm {
		f.evalErrs(n)
		return
	}
	// Zero the lanes past the last candidate up to the vector's end: they are computed too,
	// and must not hold stale values that could overflow or trap (they never do harm: the
	// results of those lanes are ignored).
	for c := f.k; c < (f.k+3)&^3; c++ {
		f.inv[c], f.z[c], f.sf[c], f.zf[c] = 0, 0, 0, 0
	}
	f.evalErrsAsm(n)
}

// sweepSums sets, for each inverse scale is[i], the sums over the group of l, l*l and l*w
// (f.sums[i], f.sums[12+i], f.sums[24+i]), where l = min(15, round(is[i]*dl[j])) is the
// weight's level in the sweep (dl >= 0). l*w is summed in the weights' order, like
// leastSquares; the other two are sums of small integers, exact in any order.
func (f *q4Fit) sweepSums(is *[12]float64, n int) {
	var sl, sll [12]int64
	var slw [12]float64
	wd := f.wd[:n]
	for j, d := range f.dl[:n] {
		x := wd[j]
		for i, s := range is {
			l := min(int64(math.Float64bits(float64(d*s)+roundMagic))-roundMagicBits, 15)
			sl[i] += l
			sll[i] += l * l
			slw[i] += float64(float64(l) * x)
		}
	}
	for i := range is {
		f.sums[i], f.sums[12+i], f.sums[24+i] = float64(sl[i]), float64(sll[i]), slw[i]
	}
}

// evalErrs sets f.errs[c] to the squared error of the reconstruction of the group under each
// queued candidate c, each weight taking its nearest level, summed in the weights' order like
// evalQ4.
func (f *q4Fit) evalErrs(n int) {
	k := f.k
	errs := f.errs[:k]
	clear(errs)
	inv, z, recon := f.inv[:k], f.z[:k], f.recon[:k]
	for _, x := range f.wd[:n] {
		for c := range errs {
			l := min(max(int64(math.Float64bits(float64(x*inv[c])+z[c]+roundMagic))-roundMagicBits, 0), 15)
			d := recon[c][l&15] - x
			errs[c] += float64(d * d)
		}
	}
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
