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
	Generate()
}

// broadcastSD fills y with 4 copies of the float64 constant whose bits are v.
func broadcastSD(v uint64, y VecVirtual) {
	t := GP64()
	MOVQ(U64(v), t)
	x := XMM()
	MOVQ(t, x)
	VBROADCASTSD(x, y)
}

const (
	bits15 = 0x402e000000000000 // 15.0
)

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
