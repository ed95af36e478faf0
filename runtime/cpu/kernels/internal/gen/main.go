// Command gen writes kernels_amd64.s, the AVX2+FMA+F16C assembly of package
// kernels, with avo. It is its own module so that avo never becomes a
// dependency of anepack. Run it with `go generate` in package kernels.
//
// Conventions of every kernel here: matrices are row-major with rows of
// `cols` elements (HF's [out, in] layout); the assembly handles only the
// first k = cols &^ 7 columns of each row (whole 8-lane vectors) and the Go
// caller adds the remaining columns, so no kernel needs masked loads.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!noasm")
	matVec("matVecF16AVX2", true)
	matVec("matVecF32AVX2", false)
	for t := 1; t <= tileTokens; t++ {
		for r := 1; r <= tileRows; r++ {
			gemmTile(fmt.Sprintf("gemmF16T%dR%d", t, r), true, t, r)
			gemmTile(fmt.Sprintf("gemmF32T%dR%d", t, r), false, t, r)
		}
	}
	sum()
	dot()
	Generate()
}

// The GEMM micro-tile: tileTokens tokens x tileRows weight rows, one 8-lane
// accumulator per pair, so 12 accumulators + 3 weight vectors + 1 activation
// vector use all 16 YMM registers.
const (
	tileTokens = 4
	tileRows   = 3
)

// prefetchDist is how far ahead (bytes) the GEMV prefetches each weight row.
// The hardware prefetcher already follows 4 sequential streams on Zen 3 and
// Intel cores; the software hint keeps more lines in flight per core, which
// is what bounds single-core DRAM bandwidth.
const prefetchDist = 512

// load8 loads 8 weights at m as 8 float32 into v: VCVTPH2PS for fp16 (the
// conversion happens in registers, the matrix is read as 2 bytes/weight).
func load8(f16 bool, m Mem, v VecVirtual) {
	if f16 {
		VCVTPH2PS(m, v)
	} else {
		VMOVUPS(m, v)
	}
}

// hsum4 reduces four 8-lane accumulators to one XMM register holding their
// four sums in order.
func hsum4(a0, a1, a2, a3 VecVirtual) VecVirtual {
	VHADDPS(a1, a0, a0) // [a0 pairs, a1 pairs] per 128-bit lane
	VHADDPS(a3, a2, a2)
	VHADDPS(a2, a0, a0) // [a0 a1 a2 a3] partial sums per 128-bit lane
	hi := XMM()
	VEXTRACTF128(U8(1), a0, hi)
	VADDPS(hi, a0.AsX(), hi)
	return hi
}

// hsum1 reduces one 8-lane accumulator to its sum in the low lane of an XMM.
func hsum1(a VecVirtual) VecVirtual {
	hi := XMM()
	VEXTRACTF128(U8(1), a, hi)
	VADDPS(hi, a.AsX(), hi)
	VHADDPS(hi, hi, hi)
	VHADDPS(hi, hi, hi)
	return hi
}

// matVec emits the GEMV: y[r] = sum_{c<k} w[r*cols+c] * x[c] for r < rows.
// Four rows at a time share each activation load; each row has two
// accumulators (16 columns per iteration) so 8 independent FMA chains hide
// the FMA latency when the matrix is cache-resident. Leftover rows run one
// at a time.
func matVec(name string, f16 bool) {
	wt, esz, shift := "[]float32", 4, 2
	if f16 {
		wt, esz, shift = "[]uint16", 2, 1
	}
	TEXT(name, NOSPLIT, "func(y []float32, w "+wt+", x []float32, rows, cols, k int)")
	Pragma("noescape")
	Doc(name+" sets y[r] = sum_{c<k} w[r*cols+c]*x[c] for r < rows; k is a multiple of 8.")
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	xbase := Load(Param("x").Base(), GP64())
	rows := Load(Param("rows"), GP64())
	ld := Load(Param("cols"), GP64())
	SHLQ(U8(shift), ld) // row stride in bytes
	k := Load(Param("k"), GP64())

	Label("rows4")
	CMPQ(rows, U8(4))
	JB(LabelRef("rows1"))
	{
		w0, w1, xp, n := GP64(), GP64(), GP64(), GP64()
		MOVQ(wp, w0)
		LEAQ(Mem{Base: wp, Index: ld, Scale: 1}, w1)
		MOVQ(xbase, xp)
		MOVQ(k, n)
		row := func(r, disp int) Mem { // rows 0..3 from two pointers
			m := Mem{Base: w0, Disp: disp}
			if r%2 == 1 {
				m.Base = w1
			}
			if r >= 2 {
				m.Index, m.Scale = ld, 2
			}
			return m
		}
		var acc [8]VecVirtual
		for i := range acc {
			acc[i] = YMM()
			VXORPS(acc[i], acc[i], acc[i])
		}
		Label("c16x4")
		CMPQ(n, U8(16))
		JB(LabelRef("c8x4"))
		x0, x1 := YMM(), YMM()
		VMOVUPS(Mem{Base: xp}, x0)
		VMOVUPS(Mem{Base: xp, Disp: 32}, x1)
		for r := 0; r < 4; r++ {
			if prefetchDist > 0 {
				PREFETCHT0(row(r, prefetchDist))
			}
			t := YMM()
			load8(f16, row(r, 0), t)
			VFMADD231PS(x0, t, acc[r])
			t = YMM()
			load8(f16, row(r, 8*esz), t)
			VFMADD231PS(x1, t, acc[4+r])
		}
		ADDQ(U8(16*esz), w0)
		ADDQ(U8(16*esz), w1)
		ADDQ(U8(64), xp)
		SUBQ(U8(16), n)
		JMP(LabelRef("c16x4"))
		Label("c8x4")
		TESTQ(n, n)
		JZ(LabelRef("sum4"))
		x0 = YMM()
		VMOVUPS(Mem{Base: xp}, x0)
		for r := 0; r < 4; r++ {
			t := YMM()
			load8(f16, row(r, 0), t)
			VFMADD231PS(x0, t, acc[r])
		}
		Label("sum4")
		for r := 0; r < 4; r++ {
			VADDPS(acc[4+r], acc[r], acc[r])
		}
		s := hsum4(acc[0], acc[1], acc[2], acc[3])
		VMOVUPS(s, Mem{Base: yp})
		ADDQ(U8(16), yp)
		LEAQ(Mem{Base: wp, Index: ld, Scale: 4}, wp)
		SUBQ(U8(4), rows)
		JMP(LabelRef("rows4"))
	}

	Label("rows1")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	{
		w0, xp, n := GP64(), GP64(), GP64()
		MOVQ(wp, w0)
		MOVQ(xbase, xp)
		MOVQ(k, n)
		a0, a1 := YMM(), YMM()
		VXORPS(a0, a0, a0)
		VXORPS(a1, a1, a1)
		Label("c16x1")
		CMPQ(n, U8(16))
		JB(LabelRef("c8x1"))
		t0, t1 := YMM(), YMM()
		load8(f16, Mem{Base: w0}, t0)
		load8(f16, Mem{Base: w0, Disp: 8 * esz}, t1)
		VFMADD231PS(Mem{Base: xp}, t0, a0)
		VFMADD231PS(Mem{Base: xp, Disp: 32}, t1, a1)
		ADDQ(U8(16*esz), w0)
		ADDQ(U8(64), xp)
		SUBQ(U8(16), n)
		JMP(LabelRef("c16x1"))
		Label("c8x1")
		TESTQ(n, n)
		JZ(LabelRef("sum1"))
		t0 = YMM()
		load8(f16, Mem{Base: w0}, t0)
		VFMADD231PS(Mem{Base: xp}, t0, a0)
		Label("sum1")
		VADDPS(a1, a0, a0)
		s := hsum1(a0)
		VMOVSS(s, Mem{Base: yp})
		ADDQ(U8(4), yp)
		ADDQ(ld, wp)
		DECQ(rows)
		JMP(LabelRef("rows1"))
	}
	Label("done")
	VZEROUPPER()
	RET()
}

// gemmTile emits one register-blocked GEMM micro-kernel for T tokens x R
// weight rows: y[t*ldy+r] = sum_{c<k} x[t*cols+c] * w[r*cols+c]. Each step
// converts R weight vectors once and reuses each for all T tokens, and loads
// each activation vector once for all R rows.
func gemmTile(name string, f16 bool, T, R int) {
	wt, esz := "[]float32", 4
	if f16 {
		wt, esz = "[]uint16", 2
	}
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []float32, w "+wt+", cols, k int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets y[t*ldy+r] = sum_{c<k} x[t*cols+c]*w[r*cols+c] for t < %d, r < %d; k is a multiple of 8.", name, T, R))
	yp := Load(Param("y").Base(), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	xp := Load(Param("x").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	cols := Load(Param("cols"), GP64())
	n := Load(Param("k"), GP64())
	ldx, ldw := GP64(), GP64()
	MOVQ(cols, ldx)
	SHLQ(U8(2), ldx)
	MOVQ(cols, ldw)
	if f16 {
		SHLQ(U8(1), ldw)
	} else {
		SHLQ(U8(2), ldw)
	}
	// Token 3 and row 3 are reached as (p1)(ld*2) with p1 = p + ld.
	x1, w1 := GP64(), GP64()
	LEAQ(Mem{Base: xp, Index: ldx, Scale: 1}, x1)
	LEAQ(Mem{Base: wp, Index: ldw, Scale: 1}, w1)
	addr := func(p, p1, ld Register, i int) Mem {
		switch i {
		case 0:
			return Mem{Base: p}
		case 1:
			return Mem{Base: p1}
		case 2:
			return Mem{Base: p, Index: ld, Scale: 2}
		default:
			return Mem{Base: p1, Index: ld, Scale: 2}
		}
	}
	acc := make([][]VecVirtual, T)
	for t := range acc {
		acc[t] = make([]VecVirtual, R)
		for r := range acc[t] {
			acc[t][r] = YMM()
			VXORPS(acc[t][r], acc[t][r], acc[t][r])
		}
	}
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("reduce"))
	wv := make([]VecVirtual, R)
	for r := range wv {
		wv[r] = YMM()
		load8(f16, addr(wp, w1, ldw, r), wv[r])
	}
	for t := 0; t < T; t++ {
		xv := YMM()
		VMOVUPS(addr(xp, x1, ldx, t), xv)
		for r := 0; r < R; r++ {
			VFMADD231PS(wv[r], xv, acc[t][r])
		}
	}
	ADDQ(U8(32), xp)
	ADDQ(U8(32), x1)
	ADDQ(U8(8*esz), wp)
	ADDQ(U8(8*esz), w1)
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))

	Label("reduce")
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			s := hsum1(acc[t][r])
			VMOVSS(s, Mem{Base: yp, Disp: 4 * r})
		}
		if t+1 < T {
			ADDQ(ldy, yp)
		}
	}
	VZEROUPPER()
	RET()
}

// sum emits a plain streaming reduction, used as the read-bandwidth yardstick
// (a STREAM-like "read only" kernel) and by Sum.
func sum() {
	TEXT("sumAVX2", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("sumAVX2 returns the sum of x; len(x) is a multiple of 32.")
	xp := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	var acc [4]VecVirtual
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for i := range acc {
		VADDPS(Mem{Base: xp, Disp: 32 * i}, acc[i], acc[i])
	}
	ADDQ(U8(128), xp)
	SUBQ(U8(32), n)
	JMP(LabelRef("loop"))
	Label("done")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	s := hsum1(acc[0])
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()
}

// dot emits the dot product of two float32 vectors (attention scores).
func dot() {
	TEXT("dotAVX2", NOSPLIT, "func(x, y []float32) float32")
	Pragma("noescape")
	Doc("dotAVX2 returns sum x[i]*y[i] over len(x), a multiple of 8.")
	xp := Load(Param("x").Base(), GP64())
	yp := Load(Param("y").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	a0, a1 := YMM(), YMM()
	VXORPS(a0, a0, a0)
	VXORPS(a1, a1, a1)
	Label("loop16")
	CMPQ(n, U8(16))
	JB(LabelRef("tail"))
	t0, t1 := YMM(), YMM()
	VMOVUPS(Mem{Base: xp}, t0)
	VMOVUPS(Mem{Base: xp, Disp: 32}, t1)
	VFMADD231PS(Mem{Base: yp}, t0, a0)
	VFMADD231PS(Mem{Base: yp, Disp: 32}, t1, a1)
	ADDQ(U8(64), xp)
	ADDQ(U8(64), yp)
	SUBQ(U8(16), n)
	JMP(LabelRef("loop16"))
	Label("tail")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	t0 = YMM()
	VMOVUPS(Mem{Base: xp}, t0)
	VFMADD231PS(Mem{Base: yp}, t0, a0)
	Label("done")
	VADDPS(a1, a0, a0)
	s := hsum1(a0)
	VZEROUPPER()
	Store(s, ReturnIndex(0))
	RET()
}
