// Command asmgen writes q4fit_amd64.s, the AVX2 kernels of package quant's q4 fit, with avo.
// It lives in its own module so that avo is never a dependency of anepack itself. Run it
// through `go generate` in package quant.
//
// The kernels evaluate several candidate fits of one group at once with the candidates as the
// vector lanes, not the weights: every lane then runs, weight after weight, exactly the
// operations the scalar search does for its candidate (the same roundings in the same order,
// with no fused multiply-add where a product is rounded), so its sums are bit for bit the
// scalar ones. An FMA appears only where the product is exact (a 4-bit level times a float32
// weight, or a level squared), where fusing can not change the result.
package main

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm")
	prologue()
	sweepAVX2()
	sweepAVX512()
	prep()
	evalAVX2()
	evalAVX512()
	eval1()
	levels()
	maxAbsBits()
	q8Row()
	Generate()
}

// broadcastSS fills y (an XMM or YMM register) with copies of the 32-bit constant v.
func broadcastSS(v uint32, y Op) {
	t := GP32()
	MOVL(U32(v), t)
	x := XMM()
	MOVD(t, x)
	VPBROADCASTD(x, y)
}

// broadcastSD fills y (a YMM or ZMM register) with copies of the float64 constant whose bits
// are v.
func broadcastSD(v uint64, y VecVirtual) {
	t := GP64()
	MOVQ(U64(v), t)
	x := XMM()
	MOVQ(t, x)
	VBROADCASTSD(x, y)
}

// vecConst returns a 32-byte read-only constant of v repeated as elements of size bits.
func vecConst(name string, v uint64, size int) Mem {
	m := GLOBL(name, attr.RODATA|attr.NOPTR)
	for off := 0; off < 32; off += size / 8 {
		if size == 64 {
			DATA(off, U64(v))
		} else {
			DATA(off, U32(uint32(v)))
		}
	}
	return m
}

// bits15 is 15.0 as float64 bits.
var bits15 = math.Float64bits(15)

// The q4 fit's lanes (see quant.q4Fit): 16 candidates, lane 0 the min/max fit of the range
// widened to 0, lane 1 the plain min/max fit, lanes 2..12 the sweep, 13..15 unused. The sweep
// kernels read the inverse scales is[0..10] (is[11..15] are 0) and write the sums of lanes
// 2..13 (AVX2) or 2..17 (AVX-512): sums holds sl, sll and slw as three arrays of 18 lanes.
const (
	sumsLanes = 18
	sweepOff  = 2 * 8 // the byte offset of sweep candidate 0's lane
)

// sweepLane is the body of the sweep for one vector t of inverse scales loaded from is: the
// level l = min(15, roundEven(is*dl)) and the sums of l, l*l and l*w. round rounds in place.
func sweepLane(is Mem, d, x, fifteen, t, sl, sll, slw VecVirtual, round func(VecVirtual)) {
	VMULPD(is, d, t) // is*dl, rounded
	round(t)         // to nearest, ties to even (dl >= 0)
	VMINPD(fifteen, t, t)
	VADDPD(t, sl, sl)
	VFMADD231PD(t, t, sll) // l*l is exact
	VFMADD231PD(t, x, slw) // l*w is exact: the sum rounds once, as in Go
}

// sweepAVX2 writes q4SweepAVX2: the sweep's sums for 12 lanes in three YMM vectors.
func sweepAVX2() {
	TEXT("q4SweepAVX2", NOSPLIT, "func(wd []float64, lo, rng float64, num, is *[16]float64, sums *[54]float64) float64")
	Pragma("noescape")
	Doc("q4SweepAVX2 sets, for i < 12, is[i] = num[i]/rng and the sums over j of l, l*l and l*wd[j],",
		"where l = min(15, roundEven(is[i]*(wd[j]-lo))), each summed in j order, into lane 2+i of the",
		"three 18-lane arrays of sums, and returns the sum of wd in j order.")
	sweepKernel(3, YMM, 32, func(t VecVirtual) { VROUNDPD(U8(0), t, t) })
}

// sweepKernel is the body of the sweep kernels: nv vectors of vb bytes from alloc.
func sweepKernel(nv int, alloc func() VecVirtual, vb int, round func(VecVirtual)) {
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("wd").Len(), GP64())
	is := Load(Param("is"), GP64())
	out := Load(Param("sums"), GP64())

	num := Load(Param("num"), GP64())
	fifteen, lo := alloc(), alloc()
	broadcastSD(bits15, fifteen)
	VBROADCASTSD(NewParamAddr("lo", 24), lo)
	{
		rng := alloc()
		VBROADCASTSD(NewParamAddr("rng", 32), rng)
		for v := range nv {
			t := alloc()
			VMOVUPD(Mem{Base: num, Disp: vb * v}, t)
			VDIVPD(rng, t, t) // num/rng, as the Go loop divides
			VMOVUPD(t, Mem{Base: is, Disp: vb * v})
		}
	}
	sl, sll, slw, t := make([]VecVirtual, nv), make([]VecVirtual, nv), make([]VecVirtual, nv), make([]VecVirtual, nv)
	for v := range nv {
		sl[v], sll[v], slw[v], t[v] = alloc(), alloc(), alloc(), alloc()
		VXORPD(sl[v], sl[v], sl[v])
		VXORPD(sll[v], sll[v], sll[v])
		VXORPD(slw[v], slw[v], slw[v])
	}
	sw := XMM()
	VXORPD(sw, sw, sw)
	d, x := alloc(), alloc()
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
	VSUBPD(lo, x, d)        // wd - lo, rounded as in Go
	VADDSD(x.AsX(), sw, sw) // sw += wd, in order
	for v := range nv {
		sweepLane(Mem{Base: is, Disp: vb * v}, d, x, fifteen, t[v], sl[v], sll[v], slw[v], round)
	}
	INCQ(j)
	CMPQ(j, n)
	JB(LabelRef("loop"))
	Label("done")
	for v := range nv {
		VMOVUPD(sl[v], Mem{Base: out, Disp: sweepOff + vb*v})
		VMOVUPD(sll[v], Mem{Base: out, Disp: 8*sumsLanes + sweepOff + vb*v})
		VMOVUPD(slw[v], Mem{Base: out, Disp: 16*sumsLanes + sweepOff + vb*v})
	}
	Store(sw, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// sweepAVX512 writes q4SweepAVX512: the same for 16 lanes in two ZMM vectors.
func sweepAVX512() {
	TEXT("q4SweepAVX512", NOSPLIT, "func(wd []float64, lo, rng float64, num, is *[16]float64, sums *[54]float64) float64")
	Pragma("noescape")
	Doc("q4SweepAVX512 is q4SweepAVX2 for 16 lanes (2..17 of sums).")
	sweepKernel(2, ZMM, 64, func(t VecVirtual) { VRNDSCALEPD(U8(0), t, t) })
}

// prep writes q4PrepAVX2: the 16 lanes' fits rounded to stored candidates, each lane the
// scalar code of the search: lanes 0 and 1 take w ≈ a*l + b from direct (a0, a1, b0, b1), the
// others solve the least squares of their sums (solveLS),
//
//	den = n*sll - sl*sl; a = (n*slw - sl*sw) / den; b = (sw - a*sl) / n
//
// (dividing by n, a power of 2, is multiplying by 1/n: both give the correctly rounded b/n),
// and all round (roundCandidate): s = fp16(float32(a)), z = fp16(float32(-b / a)), with the
// same roundings (F16C's VCVTPS2PH with imm 0 rounds to nearest even and overflows to Inf, as
// half.F32ToF16Scalar does). A lane is valid when the scalar search would evaluate it: den > 0
// (the direct lanes have none), 0 < a < Inf, s not 0, s and z finite. A valid lane is risky
// when lim/s + |z| is not below 2^50, the range of the integer rounding of the Go code. Lanes
// 13..15 are never valid. The parameters of an invalid lane are set so that the evaluation
// gives it an infinite error.
func prep() {
	TEXT("q4PrepAVX2", NOSPLIT, "func(sums *[54]float64, direct *[4]float64, sw, n, invn, lim float64, inv, z *[16]float64, s, zf *[16]float32, bits *[16]uint32) (valid, risky uint32)")
	Pragma("noescape")
	Doc("q4PrepAVX2 rounds the fits of the 16 lanes (see q4Fit) to candidates: 1/s and z as float64,",
		"s and z as float32, their fp16 bits (scale | offset<<16), and the masks of the valid lanes",
		"and of the valid lanes whose levels could exceed 2^50. n must be a power of 2 and invn 1/n.")
	sums := Load(Param("sums"), GP64())
	direct := Load(Param("direct"), GP64())
	pinv, pz, ps, pzf, pbits := Load(Param("inv"), GP64()), Load(Param("z"), GP64()), Load(Param("s"), GP64()), Load(Param("zf"), GP64()), Load(Param("bits"), GP64())
	// Constants used once per vector stay in memory: AVX2 has 16 registers (avo would hand out
	// the AVX-512 ones beyond them, which VEX instructions can not address).
	swv, nv, invn, limv, zero, one := YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	VBROADCASTSD(NewParamAddr("sw", 16), swv)
	VBROADCASTSD(NewParamAddr("n", 24), nv)
	VBROADCASTSD(NewParamAddr("invn", 32), invn)
	VBROADCASTSD(NewParamAddr("lim", 40), limv)
	VXORPD(zero, zero, zero)
	broadcastSD(math.Float64bits(1), one)
	inf := vecConst("q4inf64", math.Float64bits(math.Inf(1)), 64)
	sign := vecConst("q4sign64", 1<<63, 64)
	abs64 := vecConst("q4abs64", 1<<63-1, 64)
	big := vecConst("q4big64", math.Float64bits(0x1p50), 64)
	absm := vecConst("q4abs32", 0x7fffffff, 32)
	infs := vecConst("q4inf32", uint64(math.Float32bits(float32(math.Inf(1)))), 32)
	minus1 := vecConst("q4minus1f32", uint64(math.Float32bits(-1)), 32)
	lane12 := GLOBL("q4lane12", attr.RODATA|attr.NOPTR)
	DATA(0, U64(^uint64(0)))
	for off := 8; off < 32; off += 8 {
		DATA(off, U64(0))
	}
	valid, risky := GP32(), GP32()
	XORL(valid, valid)
	XORL(risky, risky)
	for v := range 4 {
		den, t, a, b := YMM(), YMM(), YMM(), YMM()
		{
			sl, sll, slw := YMM(), YMM(), YMM()
			VMOVUPD(Mem{Base: sums, Disp: 32 * v}, sl)
			VMOVUPD(Mem{Base: sums, Disp: 8*sumsLanes + 32*v}, sll)
			VMOVUPD(Mem{Base: sums, Disp: 16*sumsLanes + 32*v}, slw)
			VMULPD(sll, nv, den)
			VMULPD(sl, sl, t)
			VSUBPD(t, den, den) // n*sll - sl*sl
			VMULPD(slw, nv, a)
			VMULPD(swv, sl, t)
			VSUBPD(t, a, a)
			VDIVPD(den, a, a) // (n*slw - sl*sw) / den
			VMULPD(sl, a, t)
			VSUBPD(t, swv, b)
			VMULPD(invn, b, b) // (sw - a*sl) / n: exact scaling by a power of 2, as the division
		}
		if v == 0 {
			// Lanes 0 and 1 are the min/max fits: a and b as given, no least squares.
			VBLENDPD(U8(3), Mem{Base: direct}, a, a)
			VBLENDPD(U8(3), Mem{Base: direct, Disp: 16}, b, b)
			VBLENDPD(U8(3), one, den, den)
		}
		ok, m := YMM(), YMM()
		VCMPPD(U8(0x1e), zero, den, ok) // den > 0 (GT, ordered)
		VCMPPD(U8(0x1e), zero, a, m)    // a > 0
		VANDPD(m, ok, ok)
		VCMPPD(U8(0x11), inf, a, m) // a < Inf (LT, ordered)
		VANDPD(m, ok, ok)
		if v == 3 {
			VANDPD(lane12, ok, ok) // lanes 13..15 hold no candidate
		}

		sh, zh, sf, zf := XMM(), XMM(), XMM(), XMM()
		VCVTPD2PSY(a, sf)
		VCVTPS2PH(U8(0), sf, sh)
		VCVTPH2PS(sh, sf) // s
		VXORPD(sign, b, b)
		VDIVPD(a, b, b) // -b / a
		VCVTPD2PSY(b, zf)
		VCVTPS2PH(U8(0), zf, zh)
		VCVTPH2PS(zh, zf) // z
		ms, mz := XMM(), XMM()
		VCMPPS(U8(0x1e), zero.AsX(), sf, ms) // s > 0
		VCMPPS(U8(0x11), infs, sf, mz)       // s < Inf
		VANDPS(mz, ms, ms)
		VANDPS(absm, zf, mz)
		VCMPPS(U8(0x11), infs, mz, mz) // |z| < Inf
		VANDPS(mz, ms, ms)
		// The lane mask as float64 (ok) and as float32 (ms) lanes.
		VPMOVSXDQ(ms, m)
		VANDPD(m, ok, ok)
		VEXTRACTF128(U8(1), ok, mz)
		VSHUFPS(U8(0x88), mz, ok.AsX(), ms) // the low dword of each qword
		oks := GP32()
		VMOVMSKPD(ok, oks)

		// Invalid lanes get s = +Inf, z = -1, 1/s = 0, z = 0 as float64: the evaluation then
		// gives them level 0, reconstruction +Inf and an infinite error, so that they can not
		// win, and zero sums.
		t32 := XMM()
		VMOVUPS(infs, t32)
		VBLENDVPS(ms, sf, t32, sf)
		VMOVUPS(minus1, t32)
		VBLENDVPS(ms, zf, t32, zf)
		VMOVUPS(sf, Mem{Base: ps, Disp: 16 * v})
		VMOVUPS(zf, Mem{Base: pzf, Disp: 16 * v})
		VPUNPCKLWD(zh, sh, sh) // scale | offset<<16 per lane
		VMOVDQU(sh, Mem{Base: pbits, Disp: 16 * v})
		inv, zd := YMM(), YMM()
		VCVTPS2PD(sf, inv)
		VDIVPD(inv, one, inv) // 1/s
		VBLENDVPD(ok, inv, zero, inv)
		VMOVUPD(inv, Mem{Base: pinv, Disp: 32 * v})
		VCVTPS2PD(zf, zd)
		VBLENDVPD(ok, zd, zero, zd)
		VMOVUPD(zd, Mem{Base: pz, Disp: 32 * v})

		// Risky: !(lim*inv + |z| < 2^50), as the Go code tests it.
		VMULPD(inv, limv, inv)
		VANDPD(abs64, zd, zd) // |z|
		VADDPD(zd, inv, inv)
		VCMPPD(U8(0x11), big, inv, inv) // < 2^50 (LT, ordered)
		okr := GP32()
		VMOVMSKPD(inv, okr)
		NOTL(okr)
		ANDL(oks, okr)
		if v > 0 {
			SHLL(U8(4*v), oks)
			SHLL(U8(4*v), okr)
		}
		ORL(oks, valid)
		ORL(okr, risky)
	}
	Store(valid, ReturnIndex(0))
	Store(risky, ReturnIndex(1))
	VZEROUPPER()
	RET()
}

// evalLane is the body of the evaluation for one vector of candidates: the weight x's level
// under (inv, z), the reconstruction s*(l - zf) in float32, and the sums of its squared error,
// of l, l*l and l*x. Operands that are memory in one kernel are registers in the other.
func evalLane(inv, z, s, zf Op, x, zero, fifteen, t, acc, sl, sll, slw VecVirtual, round func(VecVirtual), half func(VecVirtual) Register, narrow func(t VecVirtual, h Register)) {
	VMULPD(inv, x, t) // w*inv, rounded
	VADDPD(z, t, t)   // + z, rounded: no FMA
	round(t)
	VMAXPD(zero, t, t)
	VMINPD(fifteen, t, t)
	VADDPD(t, sl, sl)
	VFMADD231PD(t, t, sll) // exact products, as in the sweep
	VFMADD231PD(t, x, slw)
	h := half(t)
	narrow(t, h)     // the level as float32 (exact)
	VSUBPS(zf, h, h) // l - z in float32
	VMULPS(s, h, h)  // s*(l - z) in float32
	VCVTPS2PD(h, t)
	VSUBPD(x, t, t)
	VMULPD(t, t, t) // d*d, rounded: no FMA
	VADDPD(t, acc, acc)
}

// evalAVX2 writes q4EvalAVX2: the 16 lanes' errors and level sums, two passes over the group
// of two YMM vectors each (four accumulators per vector leave no more registers).
func evalAVX2() {
	TEXT("q4EvalAVX2", NOSPLIT, "func(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64, sums *[54]float64) uint32")
	Pragma("noescape")
	Doc("q4EvalAVX2 sets errs[c], for the 16 lanes c, to the sum over j, in j order, of d*d, where",
		"l = clamp(roundEven(wd[j]*inv[c] + z[c]), 0, 15) (each operation rounded) and",
		"d = float64(s[c]*(float32(l)-zf[c])) - wd[j], and lane c of the three 18-lane arrays of",
		"sums to the sums of l, l*l and l*wd[j] (the last in j order), and returns the first lane",
		"with the least error.")
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("wd").Len(), GP64())
	inv := Load(Param("inv"), GP64())
	z := Load(Param("z"), GP64())
	s := Load(Param("s"), GP64())
	zf := Load(Param("zf"), GP64())
	out := Load(Param("errs"), GP64())
	sums := Load(Param("sums"), GP64())

	zero, fifteen := YMM(), YMM()
	VXORPD(zero, zero, zero)
	broadcastSD(bits15, fifteen)
	for pass := range 2 {
		var acc, sl, sll, slw, t [2]VecVirtual
		for v := range 2 {
			acc[v], sl[v], sll[v], slw[v], t[v] = YMM(), YMM(), YMM(), YMM(), YMM()
			for _, r := range []VecVirtual{acc[v], sl[v], sll[v], slw[v]} {
				VXORPD(r, r, r)
			}
		}
		x := YMM()
		j := GP64()
		XORQ(j, j)
		TESTQ(n, n)
		JZ(LabelRef(fmt.Sprintf("done%d", pass)))
		Label(fmt.Sprintf("loop%d", pass))
		VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
		for v := range 2 {
			c := 2*pass + v // the vector: lanes 4c..4c+3
			evalLane(Mem{Base: inv, Disp: 32 * c}, Mem{Base: z, Disp: 32 * c}, Mem{Base: s, Disp: 16 * c}, Mem{Base: zf, Disp: 16 * c},
				x, zero, fifteen, t[v], acc[v], sl[v], sll[v], slw[v],
				func(t VecVirtual) { VROUNDPD(U8(0), t, t) },
				func(t VecVirtual) Register { return t.AsX() },
				func(t VecVirtual, h Register) { VCVTPD2PSY(t, h) })
		}
		INCQ(j)
		CMPQ(j, n)
		JB(LabelRef(fmt.Sprintf("loop%d", pass)))
		Label(fmt.Sprintf("done%d", pass))
		for v := range 2 {
			c := 2*pass + v
			VMOVUPD(acc[v], Mem{Base: out, Disp: 32 * c})
			VMOVUPD(sl[v], Mem{Base: sums, Disp: 32 * c})
			VMOVUPD(sll[v], Mem{Base: sums, Disp: 8*sumsLanes + 32*c})
			VMOVUPD(slw[v], Mem{Base: sums, Disp: 16*sumsLanes + 32*c})
		}
	}
	// The first lane with the least error: the minimum, then the lowest lane equal to it.
	var e [4]VecVirtual
	for c := range e {
		e[c] = YMM()
		VMOVUPD(Mem{Base: out, Disp: 32 * c}, e[c])
	}
	m := YMM()
	VMINPD(e[1], e[0], m)
	VMINPD(e[2], m, m)
	VMINPD(e[3], m, m)
	Store(firstMin(m, e[:], func(c VecVirtual, eq VecVirtual, r GPVirtual) {
		VCMPPD(U8(0), eq, c, c) // EQ, ordered
		VMOVMSKPD(c, r)
	}, 4), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// firstMin reduces the vector m of lane minima to its least value, compares every vector of
// errs with it (cmp leaves the lanes' bits in r) and returns the index of the first equal lane.
// With lanes 8 (AVX-512) m is a ZMM register and only EVEX instructions are used on what may be
// registers 16..31; with lanes 4 (AVX2) only VEX ones.
func firstMin(m VecVirtual, errs []VecVirtual, cmp func(c, eq VecVirtual, r GPVirtual), lanes int) GPVirtual {
	x2 := XMM()
	if lanes == 8 {
		y2 := YMM()
		VEXTRACTF64X4(U8(1), m, y2)
		VMINPD(y2, m.AsY(), y2)
		VEXTRACTF32X4(U8(1), y2, x2)
		VMINPD(x2, y2.AsX(), x2)
	} else {
		VEXTRACTF128(U8(1), m, x2)
		VMINPD(x2, m.AsX(), x2)
	}
	x3 := XMM()
	VPERMILPD(U8(1), x2, x3)
	VMINPD(x3, x2, x2)
	b := m
	VBROADCASTSD(x2, b)
	idx := GP32()
	XORL(idx, idx)
	for i, c := range errs {
		r := GP32()
		cmp(c, b, r)
		if i > 0 {
			SHLL(U8(lanes*i), r)
		}
		ORL(r, idx)
	}
	BSFL(idx, idx)
	return idx
}

// evalAVX512 writes q4EvalAVX512: the same in one pass of two ZMM vectors, every lane
// parameter in a register.
func evalAVX512() {
	TEXT("q4EvalAVX512", NOSPLIT, "func(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64, sums *[54]float64) uint32")
	Pragma("noescape")
	Doc("q4EvalAVX512 is q4EvalAVX2 with AVX-512.")
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("wd").Len(), GP64())
	pinv := Load(Param("inv"), GP64())
	pz := Load(Param("z"), GP64())
	ps := Load(Param("s"), GP64())
	pzf := Load(Param("zf"), GP64())
	out := Load(Param("errs"), GP64())
	sums := Load(Param("sums"), GP64())

	zero, fifteen := ZMM(), ZMM()
	VXORPD(zero, zero, zero)
	broadcastSD(bits15, fifteen)
	var inv, z, s, zf, acc, sl, sll, slw, t [2]VecVirtual
	for v := range 2 {
		inv[v], z[v], s[v], zf[v] = ZMM(), ZMM(), YMM(), YMM()
		VMOVUPD(Mem{Base: pinv, Disp: 64 * v}, inv[v])
		VMOVUPD(Mem{Base: pz, Disp: 64 * v}, z[v])
		VMOVUPS(Mem{Base: ps, Disp: 32 * v}, s[v])
		VMOVUPS(Mem{Base: pzf, Disp: 32 * v}, zf[v])
		acc[v], sl[v], sll[v], slw[v], t[v] = ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
		for _, r := range []VecVirtual{acc[v], sl[v], sll[v], slw[v]} {
			VXORPD(r, r, r)
		}
	}
	x := ZMM()
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
	for v := range 2 {
		evalLane(inv[v], z[v], s[v], zf[v], x, zero, fifteen, t[v], acc[v], sl[v], sll[v], slw[v],
			func(t VecVirtual) { VRNDSCALEPD(U8(0), t, t) },
			func(t VecVirtual) Register { return t.AsY() },
			func(t VecVirtual, h Register) { VCVTPD2PS(t, h) })
	}
	INCQ(j)
	CMPQ(j, n)
	JB(LabelRef("loop"))
	Label("done")
	for v := range 2 {
		VMOVUPD(acc[v], Mem{Base: out, Disp: 64 * v})
		VMOVUPD(sl[v], Mem{Base: sums, Disp: 64 * v})
		VMOVUPD(sll[v], Mem{Base: sums, Disp: 8*sumsLanes + 64*v})
		VMOVUPD(slw[v], Mem{Base: sums, Disp: 16*sumsLanes + 64*v})
	}
	m := ZMM()
	VMINPD(acc[1], acc[0], m)
	Store(firstMin(m, acc[:], func(c, eq VecVirtual, r GPVirtual) {
		k := K()
		VCMPPD(U8(0), eq, c, k) // EQ, ordered
		KMOVW(k, r)
	}, 8), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// eval1 writes q4Eval1AVX2: the errors of 4 lanes (one YMM vector) without sums, for the
// refit's single candidate.
func eval1() {
	TEXT("q4Eval1AVX2", NOSPLIT, "func(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64)")
	Pragma("noescape")
	Doc("q4Eval1AVX2 sets errs[c] for c < 4 as q4EvalAVX2 does.")
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("wd").Len(), GP64())
	inv := Load(Param("inv"), GP64())
	z := Load(Param("z"), GP64())
	s := Load(Param("s"), GP64())
	zf := Load(Param("zf"), GP64())
	out := Load(Param("errs"), GP64())

	zero, fifteen := YMM(), YMM()
	VXORPD(zero, zero, zero)
	broadcastSD(bits15, fifteen)
	acc, t, x := YMM(), YMM(), YMM()
	VXORPD(acc, acc, acc)
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
	VMULPD(Mem{Base: inv}, x, t)
	VADDPD(Mem{Base: z}, t, t)
	VROUNDPD(U8(0), t, t)
	VMAXPD(zero, t, t)
	VMINPD(fifteen, t, t)
	VCVTPD2PSY(t, t.AsX())
	VSUBPS(Mem{Base: zf}, t.AsX(), t.AsX())
	VMULPS(Mem{Base: s}, t.AsX(), t.AsX())
	VCVTPS2PD(t.AsX(), t)
	VSUBPD(x, t, t)
	VMULPD(t, t, t)
	VADDPD(t, acc, acc)
	INCQ(j)
	CMPQ(j, n)
	JB(LabelRef("loop"))
	Label("done")
	VMOVUPD(acc, Mem{Base: out})
	VZEROUPPER()
	RET()
}

// maxAbsBits writes maxAbsBitsAVX2: the largest |w| of a row as float32 bits with the sign
// cleared, which is also the finite check (NaN and Inf lie above every finite value).
func maxAbsBits() {
	TEXT("maxAbsBitsAVX2", NOSPLIT, "func(w []float32) uint32")
	Pragma("noescape")
	Doc("maxAbsBitsAVX2 returns the largest bits&0x7fffffff over w; len(w) is a multiple of 32.")
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	mask := YMM()
	broadcastSS(0x7fffffff, mask)
	var acc [4]VecVirtual
	for k := range acc {
		acc[k] = YMM()
		VPXOR(acc[k], acc[k], acc[k])
	}
	t := YMM()
	TESTQ(n, n)
	JZ(LabelRef("maxdone"))
	Label("maxloop")
	for k := range acc {
		VPAND(Mem{Base: w, Disp: 32 * k}, mask, t)
		VPMAXUD(t, acc[k], acc[k])
	}
	ADDQ(U32(128), w)
	SUBQ(U32(32), n)
	JNZ(LabelRef("maxloop"))
	Label("maxdone")
	VPMAXUD(acc[1], acc[0], acc[0])
	VPMAXUD(acc[3], acc[2], acc[2])
	VPMAXUD(acc[2], acc[0], acc[0])
	x, y := acc[0].AsX(), XMM()
	VEXTRACTI128(U8(1), acc[0], y)
	VPMAXUD(y, x, x)
	VPSHUFD(U8(0x4e), x, y)
	VPMAXUD(y, x, x)
	VPSHUFD(U8(0xb1), x, y)
	VPMAXUD(y, x, x)
	r := GP32()
	VMOVD(x, r)
	Store(r, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// q8Row writes q8RowAVX2, the bulk of QuantizeRowQ8: q = clamp(roundEven(w*r), -127, 127) in
// float32, eight weights at a time. float32 is exact enough except near ties: w*r is within
// 2^-16 of w/s for |w/s| <= 128, so a product farther than 2^-14 from a half-integer rounds
// as the quotient does; the others are marked with -128 (never a q8 value) for the caller to
// divide exactly.
func q8Row() {
	TEXT("q8RowAVX2", NOSPLIT, "func(q []int8, w []float32, r float32) bool")
	Pragma("noescape")
	Doc("q8RowAVX2 sets q[i] = clamp(roundEven(w[i]*r), -127, 127) for the len(w) weights (a multiple",
		"of 8), except where w[i]*r lies within 2^-14 of a half-integer: there q[i] = -128 and it returns true.")
	q := Load(Param("q").Base(), GP64())
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	rv, c127, cm127, cm128, tol, abs, flags := YMM(), YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	VBROADCASTSS(NewParamAddr("r", 48), rv)
	broadcastSS(math.Float32bits(127), c127)
	broadcastSS(math.Float32bits(-127), cm127)
	broadcastSS(math.Float32bits(-128), cm128)
	broadcastSS(math.Float32bits(0.5-0x1p-14), tol)
	broadcastSS(0x7fffffff, abs)
	VXORPS(flags, flags, flags)
	x, k, f, m := YMM(), YMM(), YMM(), YMM()
	hi, lo := XMM(), XMM()
	TESTQ(n, n)
	JZ(LabelRef("q8done"))
	Label("q8loop")
	VMULPS(Mem{Base: w}, rv, x)
	VROUNDPS(U8(0), x, k) // to nearest, ties to even
	VSUBPS(k, x, f)       // the distance to the rounded value, exact
	VANDPS(abs, f, f)
	VCMPPS(U8(0x1d), tol, f, m) // |f| >= 0.5 - 2^-14 (GE, ordered)
	VORPS(m, flags, flags)
	VMINPS(c127, k, k)
	VMAXPS(cm127, k, k)
	VBLENDVPS(m, cm128, k, k)
	VCVTPS2DQ(k, k)
	VEXTRACTI128(U8(1), k, hi)
	VPACKSSDW(hi, k.AsX(), lo)
	VPACKSSWB(lo, lo, lo)
	VMOVQ(lo, Mem{Base: q})
	ADDQ(U32(32), w)
	ADDQ(U32(8), q)
	SUBQ(U32(8), n)
	JNZ(LabelRef("q8loop"))
	Label("q8done")
	mb := GP32()
	VMOVMSKPS(flags, mb)
	TESTL(mb, mb)
	ret := GP8()
	SETNE(ret)
	Store(ret, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// prologue writes q4PrologueAVX2: a group's min and max (as the builtins min and max order
// float32s, -0 below +0) and its weights widened to float64.
func prologue() {
	TEXT("q4PrologueAVX2", NOSPLIT, "func(w []float32, wd []float64) (lo, hi float32)")
	Pragma("noescape")
	Doc("q4PrologueAVX2 returns the min and max of w (finite; len(w) a positive multiple of 8) and",
		"sets wd[j] = float64(w[j]).")
	w := Load(Param("w").Base(), GP64())
	n := Load(Param("w").Len(), GP64())
	wd := Load(Param("wd").Base(), GP64())
	mask := YMM()
	broadcastSS(0x7fffffff, mask)
	// Compare keys: the float bits as int32 with the order of negative floats reversed.
	key := func(src Op, k VecVirtual) {
		t := YMM()
		VMOVDQU(src, k)
		VPSRAD(U8(31), k, t)
		VPAND(mask, t, t)
		VPXOR(t, k, k)
	}
	kmin, kmax, k := YMM(), YMM(), YMM()
	key(Mem{Base: w}, kmin)
	VMOVDQA(kmin, kmax)
	j := GP64()
	XORQ(j, j)
	Label("loop")
	key(Mem{Base: w, Index: j, Scale: 4}, k)
	VPMINSD(k, kmin, kmin)
	VPMAXSD(k, kmax, kmax)
	lo4, hi4 := YMM(), YMM()
	VCVTPS2PD(Mem{Base: w, Index: j, Scale: 4}, lo4)
	VCVTPS2PD(Mem{Base: w, Index: j, Scale: 4, Disp: 16}, hi4)
	VMOVUPD(lo4, Mem{Base: wd, Index: j, Scale: 8})
	VMOVUPD(hi4, Mem{Base: wd, Index: j, Scale: 8, Disp: 32})
	ADDQ(U8(8), j)
	CMPQ(j, n)
	JB(LabelRef("loop"))
	reduce := func(r VecVirtual, op func(a, b, c Op)) Register {
		x, y := r.AsX(), XMM()
		VEXTRACTI128(U8(1), r, y)
		op(y, x, x)
		VPSHUFD(U8(0x4e), x, y)
		op(y, x, x)
		VPSHUFD(U8(0xb1), x, y)
		op(y, x, x)
		g, t := GP32(), GP32()
		VMOVD(x, g)
		MOVL(g, t) // unkey: the same involution
		SARL(U8(31), t)
		ANDL(U32(0x7fffffff), t)
		XORL(t, g)
		return g
	}
	glo := reduce(kmin, func(a, b, c Op) { VPMINSD(a, b, c) })
	ghi := reduce(kmax, func(a, b, c Op) { VPMAXSD(a, b, c) })
	flo, fhi := XMM(), XMM()
	MOVD(glo, flo)
	MOVD(ghi, fhi)
	Store(flo, ReturnIndex(0))
	Store(fhi, ReturnIndex(1))
	VZEROUPPER()
	RET()
}

// levels writes q4LevelsAVX2: the levels of a group under the chosen (1/s, z), packed two to
// a byte as the q4 data section stores them (element 2k in the low nibble of byte k).
func levels() {
	TEXT("q4LevelsAVX2", NOSPLIT, "func(wd []float64, inv, z float64, data []byte)")
	Pragma("noescape")
	Doc("q4LevelsAVX2 sets the nibbles of data (len(wd)/2 bytes; len(wd) a multiple of 8) to the",
		"levels clamp(roundEven(wd[j]*inv + z), 0, 15), each operation rounded.")
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("wd").Len(), GP64())
	data := Load(Param("data").Base(), GP64())
	inv, z, zero, fifteen := YMM(), YMM(), YMM(), YMM()
	VBROADCASTSD(NewParamAddr("inv", 24), inv)
	VBROADCASTSD(NewParamAddr("z", 32), z)
	VXORPD(zero, zero, zero)
	broadcastSD(bits15, fifteen)
	// Byte 4i of each dword to byte i: the dwords are l(2k) | l(2k+1)<<4 after the merge.
	shuf := XMM()
	{
		t := GP64()
		MOVQ(U64(0x808080800c080400), t)
		MOVQ(t, shuf)
		VPINSRQ(U8(1), t, shuf, shuf) // the high half is not stored
	}
	j := GP64()
	XORQ(j, j)
	Label("loop")
	var l [2]VecVirtual
	for h := range 2 {
		l[h] = YMM()
		VMULPD(Mem{Base: wd, Index: j, Scale: 8, Disp: 32 * h}, inv, l[h])
		VADDPD(z, l[h], l[h])
		VROUNDPD(U8(0), l[h], l[h])
		VMAXPD(zero, l[h], l[h])
		VMINPD(fifteen, l[h], l[h])
		VCVTPD2DQY(l[h], l[h].AsX()) // exact: small integers
	}
	p, t := XMM(), XMM()
	VPACKSSDW(l[1].AsX(), l[0].AsX(), p) // 8 levels as int16: pairs (2k, 2k+1) per dword
	VPSRLD(U8(12), p, t)                 // l(2k+1)<<16 -> <<4
	VPOR(t, p, p)
	VPSHUFB(shuf, p, p)
	VMOVD(p, Mem{Base: data})
	ADDQ(U8(4), data)
	ADDQ(U8(8), j)
	CMPQ(j, n)
	JB(LabelRef("loop"))
	VZEROUPPER()
	RET()
}
