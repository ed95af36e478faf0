package main

// AVX-512 versions of the fp16/f32 matrix kernels (matVec*AVX512, gemm*Z*),
// for CPUs with AVX512F and AVX512VL (Skylake-SP and later Xeons, Ice Lake,
// Sapphire Rapids, AMD Zen 4 and Zen 5). Against the AVX2 kernels they use
// 16-lane vectors (VCVTPH2PS widens 16 fp16 weights into one ZMM) and all 32
// vector registers, so the GEMM micro-tile grows from 4x3 to 6x4: each step
// loads 4 weight vectors and 6 activation vectors for 24 FMAs (0.42 loads
// per FMA against 0.58).
//
// Only EVEX-encodable instructions touch vector registers, because the
// allocator may hand out registers 16-31, which VEX encodings (VHADDPS,
// VXORPS without AVX512DQ) cannot name. The horizontal sums therefore use
// VSHUFPS+VADDPS pairs where the AVX2 kernels use VHADDPS, with the same
// association.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The AVX-512 GEMM micro-tile: zTokens tokens x zRows weight rows, one
// 16-lane accumulator per pair: 24 accumulators + 4 weight vectors + 1
// activation vector of the 32 ZMM registers.
const (
	zTokens = 6
	zRows   = 4
)

// zRowPrefetch is how far ahead (bytes) the prefetching AVX-512 GEMV
// (matVec*AVX512) reads its weight stream with PREFETCHT0; matVec*AVX512NP
// has no software prefetch, and the kernels package picks one per CPU
// (zPrefetch in avx512_amd64.go). On a 16-core Sapphire Rapids Xeon,
// decode of the full-size Qwen2.5-0.5B (f16, `anerun bench -p 16 -n 128`,
// three alternating rounds) ran at 12.4-13.5 tok/s on 2 threads without it,
// 14.5-16.5 with 1 KiB and 17.7-19.4 with 4 KiB; on 16 threads 52.7-62.7
// without, 64.2-72.1 with 1 KiB, 66.8-70.8 with 2 KiB and 65.2-75.2 with
// 4 KiB. On a 2-core AMD Zen 5 the hardware prefetchers keep up with one
// stream per core and the prefetches cost: one thread decoded at 24.4-25.2
// tok/s without them against 21.4-22.9 with 4 KiB (docs/performance.md).
const zRowPrefetch = 4096

// zload16 loads 16 weights at m as 16 float32 into v.
func zload16(f16 bool, m Mem, v VecVirtual) {
	if f16 {
		VCVTPH2PS(m, v)
	} else {
		VMOVUPS(m, v)
	}
}

// zzero clears v with an AVX512F instruction (VXORPS on ZMM needs DQ).
func zzero(v VecVirtual) { VPXORD(v, v, v) }

// zhalve folds a 16-lane accumulator to 8 lanes in place (in its YMM part):
// a[i] = a[i] + a[i+8]. The reductions work in place on the accumulators, so
// that a 6x4 tile needs few temporaries (avo's greedy allocator fails on
// the reduction of 24 live accumulators otherwise).
func zhalve(a, tmp VecVirtual) {
	VEXTRACTF64X4(U8(1), a, tmp.AsY())
	VADDPS(tmp.AsY(), a.AsY(), a.AsY())
}

// zhadd is VHADDPS with EVEX-encodable instructions, in place: per 128-bit
// lane a = [a0+a1, a2+a3, b0+b1, b2+b3] (YMM parts).
func zhadd(a, b, tmp VecVirtual) {
	VSHUFPS(U8(0x88), b.AsY(), a.AsY(), tmp.AsY())
	VSHUFPS(U8(0xDD), b.AsY(), a.AsY(), a.AsY())
	VADDPS(tmp.AsY(), a.AsY(), a.AsY())
}

// zsum4 reduces four 16-lane accumulators in place; a0's XMM part ends up
// holding their four sums in order. Each sum is associated as (after zhalve
// gives v) ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)), exactly as zsum1 does, so
// a result does not depend on whether its row was in a full panel.
func zsum4(a0, a1, a2, a3, tmp VecVirtual) {
	for _, a := range []VecVirtual{a0, a1, a2, a3} {
		zhalve(a, tmp)
	}
	zhadd(a0, a1, tmp)
	zhadd(a2, a3, tmp)
	zhadd(a0, a2, tmp)
	VEXTRACTF32X4(U8(1), a0.AsY(), tmp.AsX())
	VADDPS(tmp.AsX(), a0.AsX(), a0.AsX())
}

// zsum1 reduces one 16-lane accumulator in place to its sum in the low lane
// of its XMM part, associated as in zsum4.
func zsum1(a, tmp VecVirtual) {
	zhalve(a, tmp)
	zhadd(a, a, tmp)
	zhadd(a, a, tmp)
	VEXTRACTF32X4(U8(1), a.AsY(), tmp.AsX())
	VADDPS(tmp.AsX(), a.AsX(), a.AsX())
}

// avx512Kernels emits every AVX-512 kernel.
func avx512Kernels() {
	zMatVec("matVecF16AVX512", true, zRowPrefetch)
	zMatVec("matVecF32AVX512", false, zRowPrefetch)
	zMatVec("matVecF16AVX512NP", true, 0)
	zMatVec("matVecF32AVX512NP", false, 0)
	for t := 1; t <= zTokens; t++ {
		for _, r := range []int{1, zRows} {
			zGemmPanels(true, t, r)
			zGemmPanels(false, t, r)
		}
	}
}

// zMatVec emits the AVX-512 GEMV: y[r] = sum_{c<k} w[r*cols+c]*x[c], one row
// at a time, 64 columns per step into 4 accumulators, then 16-column steps;
// each 64-column step prefetches the weights prefetch bytes ahead (0: none).
func zMatVec(name string, f16 bool, prefetch int) {
	wt, esz, shift := "[]float32", 4, 2
	if f16 {
		wt, esz, shift = "[]uint16", 2, 1
	}
	TEXT(name, NOSPLIT, "func(y []float32, w "+wt+", x []float32, rows, cols, k int)")
	Pragma("noescape")
	Doc(name + " sets y[r] = sum_{c<k} w[r*cols+c]*x[c] for r < rows; k is a multiple of 16.")
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	xbase := Load(Param("x").Base(), GP64())
	rows := Load(Param("rows"), GP64())
	ld := Load(Param("cols"), GP64())
	SHLQ(U8(shift), ld)
	k := Load(Param("k"), GP64())

	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	w0, xp, n := GP64(), GP64(), GP64()
	MOVQ(wp, w0)
	MOVQ(xbase, xp)
	MOVQ(k, n)
	var acc [4]VecVirtual
	for i := range acc {
		acc[i] = ZMM()
		zzero(acc[i])
	}
	Label("c64")
	CMPQ(n, U8(64))
	JB(LabelRef("c16"))
	for off := 0; off < 64*esz && prefetch > 0; off += 64 {
		PREFETCHT0(Mem{Base: w0, Disp: prefetch + off})
	}
	for i := range acc {
		t := ZMM()
		zload16(f16, Mem{Base: w0, Disp: 16 * esz * i}, t)
		VFMADD231PS(Mem{Base: xp, Disp: 64 * i}, t, acc[i])
	}
	ADDQ(U32(64*esz), w0)
	ADDQ(U32(256), xp)
	SUBQ(U8(64), n)
	JMP(LabelRef("c64"))
	Label("c16")
	TESTQ(n, n)
	JZ(LabelRef("sum"))
	t := ZMM()
	zload16(f16, Mem{Base: w0}, t)
	VFMADD231PS(Mem{Base: xp}, t, acc[0])
	ADDQ(U8(16*esz), w0)
	ADDQ(U8(64), xp)
	SUBQ(U8(16), n)
	JMP(LabelRef("c16"))
	Label("sum")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	zsum1(acc[0], acc[1])
	VMOVSS(acc[0].AsX(), Mem{Base: yp})
	ADDQ(U8(4), yp)
	ADDQ(ld, wp)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// zGemmName names the AVX-512 GEMM kernel for T tokens x R rows.
func zGemmName(f16 bool, T, R int) string {
	dt := "F32"
	if f16 {
		dt = "F16"
	}
	return fmt.Sprintf("gemm%sZT%dR%d", dt, T, R)
}

// zGemmPanels emits one AVX-512 GEMM kernel: for T tokens it sweeps `panels`
// consecutive panels of R weight rows, each with the register-blocked
// micro-kernel (R weight vectors widened once per step and reused for all T
// tokens, each activation vector loaded once for all R rows):
//
//	s = sum_{c<k} x[t*cols+c] * w[(p*R+r)*cols+c]
//	y[t*ldy+p*R+r] = s, or += s when add != 0    for t < T, r < R, p < panels
//
// The add form lets the caller split the columns into cache blocks: x and w
// then start at the block's first column and k is the block's width.
//
// Registers: T activation pointers, R weight pointers and one negative column
// index shared by all of them (a single ADD+JNZ per step); the rest of the
// state (y, ldy, the panel step and count, add) lives in the frame, as 6x4
// leaves no general register free for it.
func zGemmPanels(f16 bool, T, R int) {
	name := zGemmName(f16, T, R)
	wt, esz := "[]float32", 4
	if f16 {
		wt, esz = "[]uint16", 2
	}
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []float32, w "+wt+", cols, k, panels, add int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets (add == 0) or adds to (add != 0) y[t*ldy+p*%d+r] the sum_{c<k} x[t*cols+c]*w[(p*%d+r)*cols+c] for t < %d, r < %d, p < panels; k is a positive multiple of 16.", name, R, R, T, R))
	yLocal, ldyLocal, stepLocal := AllocLocal(8), AllocLocal(8), AllocLocal(8)
	{
		yb := Load(Param("y").Base(), GP64())
		MOVQ(yb, yLocal)
		ldy := Load(Param("ldy"), GP64())
		SHLQ(U8(2), ldy)
		MOVQ(ldy, ldyLocal)
	}
	x0 := Load(Param("x").Base(), GP64())
	w0 := Load(Param("w").Base(), GP64())
	cols := Load(Param("cols"), GP64())
	kneg := Load(Param("k"), GP64())
	{
		// step = R rows of weights in bytes.
		step := GP64()
		IMUL3Q(U32(R*esz), cols, step)
		MOVQ(step, stepLocal)
	}
	xs := rowPointers(T, x0, kneg, cols, 4)
	scale := uint8(esz)
	ws := rowPointers(R, w0, kneg, cols, scale)
	NEGQ(kneg)
	idx := GP64()

	Label("panel")
	MOVQ(kneg, idx)
	acc := make([][]VecVirtual, T)
	for t := range acc {
		acc[t] = make([]VecVirtual, R)
		for r := range acc[t] {
			acc[t][r] = ZMM()
			zzero(acc[t][r])
		}
	}
	Label("loop")
	wv := make([]VecVirtual, R)
	for r := range wv {
		wv[r] = ZMM()
		zload16(f16, Mem{Base: ws[r], Index: idx, Scale: scale}, wv[r])
	}
	xv := ZMM() // one register for every token's activations keeps the allocator's job easy
	for t := 0; t < T; t++ {
		VMOVUPS(Mem{Base: xs[t], Index: idx, Scale: 4}, xv)
		for r := 0; r < R; r++ {
			VFMADD231PS(wv[r], xv, acc[t][r])
		}
	}
	ADDQ(U8(16), idx)
	JNZ(LabelRef("loop"))

	// Reduce each token's R sums and set or add them. idx is free until the
	// next panel and serves as the output pointer.
	yp := idx
	MOVQ(yLocal, yp)
	tmp := ZMM()
	for t := 0; t < T; t++ {
		s := acc[t][0]
		if R == 4 {
			zsum4(s, acc[t][1], acc[t][2], acc[t][3], tmp)
		} else {
			zsum1(s, tmp)
		}
		set := fmt.Sprintf("set%d", t)
		CMPQ(paramMem("add"), U8(0))
		JE(LabelRef(set))
		if R == 4 {
			VADDPS(Mem{Base: yp}, s.AsX(), s.AsX())
		} else {
			VADDSS(Mem{Base: yp}, s.AsX(), s.AsX())
		}
		Label(set)
		if R == 4 {
			VMOVUPS(s.AsX(), Mem{Base: yp})
		} else {
			VMOVSS(s.AsX(), Mem{Base: yp})
		}
		if t+1 < T {
			ADDQ(ldyLocal, yp)
		}
	}
	Label("next")
	ADDQ(U8(4*R), yLocal)
	for r := range ws {
		ADDQ(stepLocal, ws[r])
	}
	DECQ(paramMem("panels"))
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}

// paramMem returns the argument slot of a scalar parameter as a memory
// operand (in ABI0 the callee may read and write its argument slots).
func paramMem(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
