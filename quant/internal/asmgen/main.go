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

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm")
	sweep()
	for nv := 1; nv <= 4; nv++ {
		eval(nv)
	}
	maxAbsBits()
	q8Row()
	Generate()
}

// broadcastSS fills y with 8 copies of the 32-bit constant v.
func broadcastSS(v uint32, y VecVirtual) {
	t := GP32()
	MOVL(U32(v), t)
	x := XMM()
	MOVD(t, x)
	VPBROADCASTD(x, y)
}

// broadcastSD fills y with 4 copies of the float64 constant whose bits are v.
func broadcastSD(v uint64, y VecVirtual) {
	t := GP64()
	MOVQ(U64(v), t)
	x := XMM()
	MOVQ(t, x)
	VBROADCASTSD(x, y)
}

// bits15 is 15.0 as float64 bits.
var bits15 = math.Float64bits(15)

// sweep writes q4SweepAVX2: the least-squares sums of the 12 (11 used) inverse scales of the
// sweep, three vectors of four lanes.
func sweep() {
	TEXT("q4SweepAVX2", NOSPLIT, "func(dl, wd []float64, is *[12]float64, sums *[36]float64)")
	Pragma("noescape")
	Doc("q4SweepAVX2 sets sums[i], sums[12+i] and sums[24+i] to the sums over j of l, l*l and",
		"l*wd[j], l = min(15, roundEven(is[i]*dl[j])), each summed in j order; len(wd) >= len(dl).")
	dl := Load(Param("dl").Base(), GP64())
	wd := Load(Param("wd").Base(), GP64())
	n := Load(Param("dl").Len(), GP64())
	is := Load(Param("is"), GP64())
	out := Load(Param("sums"), GP64())

	fifteen := YMM()
	broadcastSD(bits15, fifteen)
	var sl, sll, slw, t [3]VecVirtual
	for v := range 3 {
		sl[v], sll[v], slw[v], t[v] = YMM(), YMM(), YMM(), YMM()
		VXORPD(sl[v], sl[v], sl[v])
		VXORPD(sll[v], sll[v], sll[v])
		VXORPD(slw[v], slw[v], slw[v])
	}
	d, x := YMM(), YMM()
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("sweepdone"))
	Label("sweeploop")
	VBROADCASTSD(Mem{Base: dl, Index: j, Scale: 8}, d)
	VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
	for v := range 3 {
		VMULPD(Mem{Base: is, Disp: 32 * v}, d, t[v]) // is*dl, rounded
		VROUNDPD(U8(0), t[v], t[v])                  // to nearest, ties to even (dl >= 0)
		VMINPD(fifteen, t[v], t[v])
		VADDPD(t[v], sl[v], sl[v])
		VFMADD231PD(t[v], t[v], sll[v]) // l*l is exact
		VFMADD231PD(t[v], x, slw[v])    // l*w is exact: the sum rounds once, as in Go
	}
	INCQ(j)
	CMPQ(j, n)
	JB(LabelRef("sweeploop"))
	Label("sweepdone")
	for v := range 3 {
		VMOVUPD(sl[v], Mem{Base: out, Disp: 32 * v})
		VMOVUPD(sll[v], Mem{Base: out, Disp: 96 + 32*v})
		VMOVUPD(slw[v], Mem{Base: out, Disp: 192 + 32*v})
	}
	VZEROUPPER()
	RET()
}

// eval writes q4EvalNAVX2 (N = nv): the squared reconstruction errors of 4*nv candidates.
func eval(nv int) {
	name := fmt.Sprintf("q4Eval%dAVX2", nv)
	TEXT(name, NOSPLIT, "func(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets errs[c] for c < %d to the sum over j, in j order, of d*d, where", name, 4*nv),
		"l = clamp(roundEven(wd[j]*inv[c] + z[c]), 0, 15) (each operation rounded) and",
		"d = float64(s[c]*(float32(l)-zf[c])) - wd[j].")
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
	acc, t := make([]VecVirtual, nv), make([]VecVirtual, nv)
	for v := range nv {
		acc[v], t[v] = YMM(), YMM()
		VXORPD(acc[v], acc[v], acc[v])
	}
	x := YMM()
	j := GP64()
	XORQ(j, j)
	TESTQ(n, n)
	JZ(LabelRef("evaldone"))
	Label("evalloop")
	VBROADCASTSD(Mem{Base: wd, Index: j, Scale: 8}, x)
	for v := range nv {
		VMULPD(Mem{Base: inv, Disp: 32 * v}, x, t[v])  // w*inv, rounded
		VADDPD(Mem{Base: z, Disp: 32 * v}, t[v], t[v]) // + z, rounded: no FMA
		VROUNDPD(U8(0), t[v], t[v])
		VMAXPD(zero, t[v], t[v])
		VMINPD(fifteen, t[v], t[v])
		tx := t[v].AsX()
		VCVTPD2PSY(t[v], tx)                        // the level as float32 (exact)
		VSUBPS(Mem{Base: zf, Disp: 16 * v}, tx, tx) // l - z in float32
		VMULPS(Mem{Base: s, Disp: 16 * v}, tx, tx)  // s*(l - z) in float32
		VCVTPS2PD(tx, t[v])
		VSUBPD(x, t[v], t[v])
		VMULPD(t[v], t[v], t[v]) // d*d, rounded: no FMA
		VADDPD(t[v], acc[v], acc[v])
	}
	INCQ(j)
	CMPQ(j, n)
	JB(LabelRef("evalloop"))
	Label("evaldone")
	for v := range nv {
		VMOVUPD(acc[v], Mem{Base: out, Disp: 32 * v})
	}
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
