package main

// Softmax's helpers besides expSum: the row maximum and the final scaling.
// Attention over long prompts runs them over every score, where the Go
// loops cost about as much as the two matrix products around them.

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// maxf emits the maximum of a float32 vector, 4 independent VMAXPS chains of
// 8 lanes (32 values per step), then 8-value steps.
func maxf() {
	TEXT("maxAVX2", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("maxAVX2 returns the largest value of x; len(x) is a positive multiple of 8. A NaN in x may or may not propagate.")
	xp := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	var acc [4]VecVirtual
	for i := range acc {
		acc[i] = YMM()
		VMOVUPS(Mem{Base: xp}, acc[i])
	}
	Label("loop32")
	CMPQ(n, U8(32))
	JB(LabelRef("loop8"))
	for i := range acc {
		VMAXPS(Mem{Base: xp, Disp: 32 * i}, acc[i], acc[i])
	}
	ADDQ(U8(128), xp)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop8")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	VMAXPS(Mem{Base: xp}, acc[0], acc[0])
	ADDQ(U8(32), xp)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop8"))
	Label("done")
	VMAXPS(acc[1], acc[0], acc[0])
	VMAXPS(acc[3], acc[2], acc[2])
	VMAXPS(acc[2], acc[0], acc[0])
	hi := XMM()
	VEXTRACTF128(U8(1), acc[0], hi)
	VMAXPS(hi, acc[0].AsX(), hi)
	t := XMM()
	VPERMILPS(U8(0x4E), hi, t) // swap the 64-bit halves
	VMAXPS(t, hi, hi)
	VPERMILPS(U8(0xB1), hi, t) // swap neighbours
	VMAXPS(t, hi, hi)
	VZEROUPPER()
	Store(hi, ReturnIndex(0))
	RET()
}

// scale emits x *= a, 8 lanes per step (one rounding per product, as the Go
// loop: the results are identical).
func scale() {
	TEXT("scaleAVX2", NOSPLIT, "func(x []float32, a float32)")
	Pragma("noescape")
	Doc("scaleAVX2 sets x[i] *= a for i < len(x), a multiple of 8.")
	xp := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	ax := Load(Param("a"), XMM())
	av := YMM()
	VBROADCASTSS(ax, av)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	v := YMM()
	VMULPS(Mem{Base: xp}, av, v)
	VMOVUPS(v, Mem{Base: xp})
	ADDQ(U8(32), xp)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
