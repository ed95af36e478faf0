package main

// The batched q8 GEMM with float32 activations (gemmQ8Z*, gemmQ8Y*): int8
// weights, one fp16 scale per row, times float32 activations as they are
// (no activation quantization). It is the fp16 GEMM (zGemmPanels, gemmTile)
// with the weight load changed: per step VPMOVSXBD widens 16 (AVX-512) or 8
// (AVX2) int8 weights of each row of the tile to int32 lanes and VCVTDQ2PS
// makes them float32 (exact: |w| <= 127), once per tile, for all its tokens;
// the tokens' activations are FMAed against them as in the fp16 GEMM. The
// row's scale factors out of the row's sum, so it multiplies each output
// once, after the reduction.
//
// The integer W8A16 kernels (q16.go) stay the decode kernels: they read the
// same bytes, and at one token the product is bound by reading them. In a
// batch the float form wins: per token and 32 weights of a row it costs two
// ZMM FMAs (the widening is shared by the tile's 6 tokens) where W8A16 costs
// VPMADDWD + VPDPWSSD + VCVTDQ2PS + VFMADD on YMM.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q8fName names the q8 float-activation GEMM kernel of T tokens x R rows:
// Z for the AVX-512 one (tile zTokens x zRows), Y for the AVX2 one
// (tileTokens x tileRows).
func q8fName(z bool, T, R int) string {
	isa := "Y"
	if z {
		isa = "Z"
	}
	return fmt.Sprintf("gemmQ8%sT%dR%d", isa, T, R)
}

// q8fKernels emits every q8 float-activation kernel.
func q8fKernels() {
	eachTile(zTokens, zRows, q8fPanels)
}

// eachTile calls emit for every AVX-512 tile shape (1..zt tokens by 1 or zr rows), then every
// AVX2 one (1..tileTokens tokens by 1 or tileRows rows).
func eachTile(zt, zr int, emit func(z bool, T, R int)) {
	for t := 1; t <= zt; t++ {
		for _, r := range []int{1, zr} {
			emit(true, t, r)
		}
	}
	for t := 1; t <= tileTokens; t++ {
		for _, r := range []int{1, tileRows} {
			emit(false, t, r)
		}
	}
}

// panelLocals allocates the frame slots of a float-activation panel kernel and fills three:
// y's base, ldy in bytes and the base of the slice parameter scales; stepLocal, the panel
// step in bytes, is the caller's to store.
func panelLocals(scales string) (yLocal, ldyLocal, stepLocal, sLocal Mem) {
	yLocal, ldyLocal, stepLocal, sLocal = AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	yb := Load(Param("y").Base(), GP64())
	MOVQ(yb, yLocal)
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	MOVQ(ldy, ldyLocal)
	sb := Load(Param(scales).Base(), GP64())
	MOVQ(sb, sLocal)
	return yLocal, ldyLocal, stepLocal, sLocal
}

// q8fPanels emits one kernel: for T tokens it sweeps `panels` consecutive
// panels of R weight rows:
//
//	s = scale[p*R+r] * sum_{c<k} x[t*cols+c] * w[(p*R+r)*cols+c]
//	y[t*ldy+p*R+r] = s, or += s when add != 0    for t < T, r < R, p < panels
//
// As in zGemmPanels, the add form lets the caller split the columns into
// cache blocks (x and w then start at the block's first column, k is its
// width). Registers: T activation pointers, R weight pointers, one negative
// column index; y, ldy, the scale pointer and the panel step live in the
// frame.
func q8fPanels(z bool, T, R int) {
	name := q8fName(z, T, R)
	lanes := 8
	vec := YMM
	if z {
		lanes, vec = 16, ZMM
	}
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []float32, w []int8, scale []uint16, cols, k, panels, add int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets (add == 0) or adds to (add != 0) y[t*ldy+p*%d+r] the scale[p*%d+r] * sum_{c<k} x[t*cols+c]*w[(p*%d+r)*cols+c] for t < %d, r < %d, p < panels; k is a positive multiple of %d.", name, R, R, R, T, R, lanes))
	yLocal, ldyLocal, stepLocal, sLocal := panelLocals("scale")
	x0 := Load(Param("x").Base(), GP64())
	w0 := Load(Param("w").Base(), GP64())
	cols := Load(Param("cols"), GP64())
	kneg := Load(Param("k"), GP64())
	{
		step := GP64()
		IMUL3Q(U32(R), cols, step)
		MOVQ(step, stepLocal)
	}
	xs := rowPointers(T, x0, kneg, cols, 4)
	ws := rowPointers(R, w0, kneg, cols, 1)
	NEGQ(kneg)
	idx := GP64()

	Label("panel")
	MOVQ(kneg, idx)
	acc := make([][]VecVirtual, T)
	for t := range acc {
		acc[t] = make([]VecVirtual, R)
		for r := range acc[t] {
			acc[t][r] = vec()
			if z {
				zzero(acc[t][r])
			} else {
				VXORPS(acc[t][r], acc[t][r], acc[t][r])
			}
		}
	}
	Label("loop")
	wv := make([]VecVirtual, R)
	for r := range wv {
		wv[r] = vec()
		VPMOVSXBD(Mem{Base: ws[r], Index: idx, Scale: 1}, wv[r])
		VCVTDQ2PS(wv[r], wv[r])
	}
	xv := vec()
	for t := 0; t < T; t++ {
		VMOVUPS(Mem{Base: xs[t], Index: idx, Scale: 4}, xv)
		for r := 0; r < R; r++ {
			VFMADD231PS(wv[r], xv, acc[t][r])
		}
	}
	ADDQ(U8(lanes), idx)
	JNZ(LabelRef("loop"))

	// The panel's R scales as float32 in an XMM (lanes R..3 unused), then
	// per token: reduce, scale, set or add. idx is free until the next
	// panel and serves as the output pointer.
	sp := GP64()
	MOVQ(sLocal, sp)
	sc := XMM()
	switch R {
	case 4:
		VCVTPH2PS(Mem{Base: sp}, sc) // exactly the panel's 4 scales
	case 3:
		VMOVD(Mem{Base: sp}, sc)
		VPINSRW(U8(2), Mem{Base: sp, Disp: 4}, sc, sc)
		VCVTPH2PS(sc, sc)
	case 1:
		g := GP32()
		MOVWLZX(Mem{Base: sp}, g)
		VMOVD(g, sc)
		VCVTPH2PS(sc, sc)
	default:
		panic("q8fPanels: R must be 1, 3 or 4")
	}
	yp := idx
	MOVQ(yLocal, yp)
	for t := 0; t < T; t++ {
		var s VecVirtual
		switch {
		case z && R == 4:
			s = acc[t][0]
			zsum4(s, acc[t][1], acc[t][2], acc[t][3], vec())
		case z:
			s = acc[t][0]
			zsum1(s, vec())
		case R == 3:
			s = hsum4(acc[t][0], acc[t][1], acc[t][2], acc[t][2])
		default:
			s = hsum1(acc[t][0])
		}
		VMULPS(sc, s.AsX(), s.AsX())
		set := fmt.Sprintf("set%d", t)
		CMPQ(paramMem("add"), U8(0))
		JE(LabelRef(set))
		switch R { // read exactly the R outputs (y may end at a page's end)
		case 4:
			VADDPS(Mem{Base: yp}, s.AsX(), s.AsX())
		case 3:
			old := XMM()
			VMOVSD(Mem{Base: yp}, old)
			VINSERTPS(U8(0x20), Mem{Base: yp, Disp: 8}, old, old)
			VADDPS(old, s.AsX(), s.AsX())
		default:
			VADDSS(Mem{Base: yp}, s.AsX(), s.AsX())
		}
		Label(set)
		switch R {
		case 4:
			VMOVUPS(s.AsX(), Mem{Base: yp})
		case 3:
			VMOVLPS(s.AsX(), Mem{Base: yp})
			VEXTRACTPS(U8(2), s.AsX(), Mem{Base: yp, Disp: 8})
		default:
			VMOVSS(s.AsX(), Mem{Base: yp})
		}
		if t+1 < T {
			ADDQ(ldyLocal, yp)
		}
	}
	ADDQ(U8(4*R), yLocal)
	ADDQ(U8(2*R), sLocal)
	for r := range ws {
		ADDQ(stepLocal, ws[r])
	}
	DECQ(paramMem("panels"))
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}
