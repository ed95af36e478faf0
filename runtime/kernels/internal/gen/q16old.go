package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q8OldPanels: the W8A8 q8 kernels of 2500f7d, for an in-process comparison only.
func q8OldPanels(isa string, T, R int) {
	vnni := isa == "VNNI"
	name := fmt.Sprintf("q8W8A8%sT%dR%d", isa, T, R)
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []byte, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sweeps q8 panels of %d rows for %d tokens; k is a positive multiple of 32.", name, R, T))
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	sp := Load(Param("scale").Base(), GP64())
	panels := Load(Param("panels"), GP64())

	Label("panel")
	xp := Load(Param("x").Base(), GP64())
	xstr := Load(Param("xstride"), GP64())
	dp := Load(Param("d").Base(), GP64())
	dstr := Load(Param("dstride"), GP64())
	SHLQ(U8(2), dstr)
	wstr := Load(Param("cols"), GP64())
	var xp2, dp2 Register
	if T > 3 {
		xp2, dp2 = GP64(), GP64()
		LEAQ(Mem{Base: xp, Index: xstr, Scale: 2}, xp2)
		LEAQ(Mem{Base: dp, Index: dstr, Scale: 2}, dp2)
	}
	n := Load(Param("k"), GP64())
	SHRQ(U8(5), n)
	acc := zeroAcc(T, R)

	Label("loop")
	wv, aw := make([]VecVirtual, R), make([]VecVirtual, R)
	for r := 0; r < R; r++ {
		if T == 1 {
			PREFETCHT0(rowMem(wp, wstr, r, rowPrefetch))
		}
		wv[r] = YMM()
		VMOVDQU(rowMem(wp, wstr, r, 0), wv[r])
		if vnni {
			VPXOR(q16Bias, wv[r], wv[r])
		} else {
			aw[r] = YMM()
			VPABSB(wv[r], aw[r])
		}
	}
	for t := 0; t < T; t++ {
		xm := tokenMem(xp, xp2, xstr, t, 0)
		db := YMM()
		VBROADCASTSS(tokenMem(dp, dp2, dstr, t, 0), db)
		var xv VecVirtual
		if !vnni {
			xv = YMM()
			VMOVDQU(xm, xv)
		}
		for r := 0; r < R; r++ {
			i := YMM()
			if vnni {
				VMOVDQU(tokenMem(xp, xp2, xstr, t, 32), i) // -128*lane sums
				VPDPBUSD(xm, wv[r], i)
			} else {
				VPSIGNB(wv[r], xv, i)
				VPMADDUBSW(i, aw[r], i)
				VPMADDWD(cOnes16, i, i)
			}
			VCVTDQ2PS(i, i)
			VFMADD231PS(db, i, acc[t][r])
		}
	}
	ADDQ(U8(32), wp)
	ADDQ(U8(64), xp)
	ADDQ(U8(4), dp)
	if T > 3 {
		ADDQ(U8(64), xp2)
		ADDQ(U8(4), dp2)
	}
	DECQ(n)
	JNZ(LabelRef("loop"))

	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	yt := GP64()
	MOVQ(yp, yt)
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			s := hsum1(acc[t][r])
			mulScale(Mem{Base: sp, Disp: 2 * r}, s)
			VMOVSS(s, Mem{Base: yt, Disp: 4 * r})
		}
		if t+1 < T {
			ADDQ(ldy, yt)
		}
	}
	// Next panel: rows move on by R, w's pointer back by the k columns
	// the loop walked.
	ADDQ(U8(4*R), yp)
	ADDQ(U8(2*R), sp)
	adv := Load(Param("cols"), GP64())
	if R == 2 {
		SHLQ(U8(1), adv)
	}
	SUBQ(Load(Param("k"), GP64()), adv)
	ADDQ(adv, wp)
	DECQ(panels)
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}
