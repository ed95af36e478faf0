// Command asmgen writes half_amd64.s, the AVX2+F16C assembly of package half,
// with avo. It lives in its own module so that avo is never a dependency of
// anepack itself. Run it through `go generate` in package half.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm")
	bf16ToF16()
	bf16ToF32()
	f16ToF32()
	f32ToF16()
	Generate()
}

// broadcastW fills y with 16 copies of the 16-bit constant v.
func broadcastW(v uint16, y VecVirtual) {
	t := GP32()
	MOVL(U32(uint32(v)), t)
	x := XMM()
	MOVD(t, x)
	VPBROADCASTW(x, y)
}

// bf16ToF16 converts 16 values per iteration: bf16 -> f32 is a zero-extend
// and a shift, f32 -> f16 is VCVTPS2PH with imm 0 (round to nearest even,
// whatever MXCSR says). The loss counts are needed only for the rare inputs
// outside fp16's normal range, so one cheap range test per block decides
// whether the block takes the slow counting path.
func bf16ToF16() {
	TEXT("bf16ToF16AVX2", NOSPLIT, "func(dst, src []uint16, counts *[5]int)")
	Pragma("noescape")
	Doc("bf16ToF16AVX2 converts len(src) values (a multiple of 16) into dst",
		"and stores {overflow, underflow, subnormal, inexact, nan} counts.")
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	SHRQ(U8(4), n)

	mask7FFF, c3880, c477F, c7F80, c7F7F, c03FF, zero := YMM(), YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	broadcastW(0x7FFF, mask7FFF)
	broadcastW(0x3880, c3880) // 2^-14, the smallest fp16 normal, as bf16
	broadcastW(0x477F, c477F) // largest bf16 below 65536 (rounds to a finite fp16)
	broadcastW(0x7F80, c7F80) // +Inf as bf16
	broadcastW(0x7F7F, c7F7F) // largest finite bf16
	broadcastW(0x03FF, c03FF) // largest fp16 subnormal
	VPXOR(zero, zero, zero)

	// Counters hold twice the count: VPMOVMSKB gives two bits per 16-bit lane.
	cOver, cUnder, cSub, cInexact, cNaN := GP64(), GP64(), GP64(), GP64(), GP64()
	for _, c := range []GPVirtual{cOver, cUnder, cSub, cInexact, cNaN} {
		XORQ(c, c)
	}
	lo, hi := YMM(), YMM()   // the 16 inputs as float32
	hlo, hhi := XMM(), XMM() // the 16 results
	x, a, t, u := YMM(), YMM(), YMM(), YMM()
	bits := GP64()

	TESTQ(n, n)
	JZ(LabelRef("done"))
	Label("loop")
	VPMOVZXWD(Mem{Base: src}, lo)
	VPMOVZXWD(Mem{Base: src, Disp: 16}, hi)
	VPSLLD(U8(16), lo, lo)
	VPSLLD(U8(16), hi, hi)
	VCVTPS2PH(U8(0), lo, hlo)
	VCVTPS2PH(U8(0), hi, hhi)
	VMOVDQU(hlo, Mem{Base: dst})
	VMOVDQU(hhi, Mem{Base: dst, Disp: 16})

	// Quick test: a lane needs counting unless |x| is 0 or in [2^-14, 65536).
	VMOVDQU(Mem{Base: src}, x)
	VPAND(mask7FFF, x, a)
	VPCMPGTW(a, c3880, t) // a < 2^-14
	VPCMPEQW(zero, a, u)  // a == 0
	VPANDN(t, u, t)       // t = a < 2^-14 && a != 0
	VPCMPGTW(c477F, a, u) // a >= 65536 (incl. Inf and NaN)
	VPOR(u, t, t)
	VPTEST(t, t)
	JNZ(LabelRef("slow"))
	Label("next")
	ADDQ(U8(32), src)
	ADDQ(U8(32), dst)
	DECQ(n)
	JNZ(LabelRef("loop"))

	Label("done")
	out := Load(Param("counts"), GP64())
	for i, c := range []GPVirtual{cOver, cUnder, cSub, cInexact, cNaN} {
		SHRQ(U8(1), c)
		MOVQ(c, Mem{Base: out, Disp: 8 * i})
	}
	VZEROUPPER()
	RET()

	// Slow path: count every kind of loss in this block, then go on.
	Label("slow")
	count := func(m VecVirtual, c GPVirtual) {
		VPMOVMSKB(m, bits.As32())
		POPCNTL(bits.As32(), bits.As32())
		ADDQ(bits, c)
	}
	// NaN: a > 0x7F80.
	VPCMPGTW(c7F80, a, t)
	count(t, cNaN)
	// Overflow: finite and a >= 65536.
	VPCMPGTW(c477F, a, t)
	VPCMPGTW(c7F7F, a, u)
	VPANDN(t, u, t)
	count(t, cOver)
	// Subnormal result: 0 < |h| <= 0x3FF.
	h := x // x is no longer needed
	VINSERTI128(U8(1), hhi, hlo.AsY(), h)
	VPAND(mask7FFF, h, h)
	VPCMPGTW(zero, h, t)
	VPCMPGTW(c03FF, h, u)
	VPANDN(t, u, t)
	count(t, cSub)
	// Underflow: h == ±0 but a != 0.
	VPCMPEQW(zero, h, t)
	VPCMPEQW(zero, a, u)
	VPANDN(t, u, t)
	count(t, cUnder)
	// Inexact: the fp16 result widened back differs from the input, compared
	// as floats with an ordered predicate so NaNs never count.
	VCVTPH2PS(hlo, t)
	VCMPPS(U8(0x0C), lo, t, t) // NEQ_OQ
	VCVTPH2PS(hhi, u)
	VCMPPS(U8(0x0C), hi, u, u)
	VPACKSSDW(u, t, t) // lane order changes; only the count matters
	count(t, cInexact)
	JMP(LabelRef("next"))
}

// bf16ToF32 widens 8 values per step: zero-extend to 32 bits and shift up.
func bf16ToF32() {
	TEXT("bf16ToF32AVX2", NOSPLIT, "func(dst []float32, src []uint16)")
	Pragma("noescape")
	Doc("bf16ToF32AVX2 widens len(src) values (a multiple of 8) into dst.")
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	unrolled(n, src, dst, 2, 4, func(i int) {
		y := YMM()
		VPMOVZXWD(Mem{Base: src, Disp: 16 * i}, y)
		VPSLLD(U8(16), y, y)
		VMOVDQU(y, Mem{Base: dst, Disp: 32 * i})
	})
}

// f16ToF32 widens 8 values per step with VCVTPH2PS.
func f16ToF32() {
	TEXT("f16ToF32AVX2", NOSPLIT, "func(dst []float32, src []uint16)")
	Pragma("noescape")
	Doc("f16ToF32AVX2 widens len(src) values (a multiple of 8) into dst.")
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	unrolled(n, src, dst, 2, 4, func(i int) {
		y := YMM()
		VCVTPH2PS(Mem{Base: src, Disp: 16 * i}, y)
		VMOVUPS(y, Mem{Base: dst, Disp: 32 * i})
	})
}

// f32ToF16 narrows 8 values per step with VCVTPS2PH, imm 0 = nearest even.
func f32ToF16() {
	TEXT("f32ToF16AVX2", NOSPLIT, "func(dst []uint16, src []float32)")
	Pragma("noescape")
	Doc("f32ToF16AVX2 narrows len(src) values (a multiple of 8) into dst.")
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	unrolled(n, src, dst, 4, 2, func(i int) {
		y := YMM()
		VMOVUPS(Mem{Base: src, Disp: 32 * i}, y)
		VCVTPS2PH(U8(0), y, Mem{Base: dst, Disp: 16 * i})
	})
}

// unrolled emits a loop over n elements (a multiple of 8) that calls step(i)
// for 4 blocks of 8 at a time, then for single blocks; srcSize and dstSize
// are the element sizes in bytes.
func unrolled(n, src, dst Register, srcSize, dstSize int, step func(i int)) {
	SHRQ(U8(3), n) // blocks of 8
	Label("loop4")
	CMPQ(n, U8(4))
	JB(LabelRef("loop1"))
	for i := 0; i < 4; i++ {
		step(i)
	}
	ADDQ(U32(32*srcSize), src)
	ADDQ(U32(32*dstSize), dst)
	SUBQ(U8(4), n)
	JMP(LabelRef("loop4"))
	Label("loop1")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	step(0)
	ADDQ(U32(8*srcSize), src)
	ADDQ(U32(8*dstSize), dst)
	DECQ(n)
	JMP(LabelRef("loop1"))
	Label("done")
	VZEROUPPER()
	RET()
}
