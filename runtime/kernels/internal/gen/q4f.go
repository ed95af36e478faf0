package main

// The batched q4 GEMM with float32 activations (gemmQ4Z*, gemmQ4Y*): uint4
// weights packed two per byte (element 2k in the low nibble of byte k), an
// fp16 scale and offset per group of G inputs of a row, times float32
// activations as they are (no activation quantization). It is the q8 one
// (q8f.go), hence the fp16 GEMM, with the weight load changed: per step the
// codes of 16 (AVX-512) or 8 (AVX2) columns of each row of the tile are
// made float32 lanes of the dequantized weights, exactly as quant.DequantizeQ4
// defines them, w = scale * (q - offset) in float32, once per tile for all
// its tokens; the tokens' activations are FMAed against them as in the fp16
// GEMM.
//
// AVX-512 (with VBMI), 8 tokens x 3 rows: at each group's start a row's 16
// possible weight values, scale * (q - offset) for q = 0..15, are one ZMM
// table; per step VPMULTISHIFTQB of the 8 code bytes (broadcast from memory)
// puts nibble j in the low bits of dword j and VPERMPS (which reads only the
// low 4 bits of an index) looks the 16 weights up: two instructions per row
// and 16 columns. AVX2, 4 x 3: VPMOVZXBW widens 4 bytes b_k to words, (w |
// w<<4) & 0x0F0F puts lo(b_k) in byte 2k and hi(b_k) in byte 2k+1,
// VPMOVZXBD + VCVTDQ2PS make them float32 lanes, then VSUBPS and VMULPS with
// the group's offset and scale broadcast.
//
// The scales and offsets are read as float32 from a buffer the Go caller
// fills once per call (q4FloatScales), laid out per panel of R rows: for
// each group 2R floats, the R rows' scales then their offsets, so that a
// step reads its rows' values at fixed displacements of one pointer, which
// moves on by 8R bytes at the end of every group.

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q4fName names the q4 float-activation GEMM kernel of T tokens x R rows.
func q4fName(z bool, T, R int) string {
	isa := "Y"
	if z {
		isa = "Z"
	}
	return fmt.Sprintf("gemmQ4%sT%dR%d", isa, T, R)
}

// The AVX-512 q4 float tile: zq4Tokens tokens x zq4Rows rows. Its 24
// accumulators, 3 weight vectors, 1 activation vector, the 3 rows' code
// tables and the VPMULTISHIFTQB control use all 32 ZMM registers.
const (
	zq4Tokens = 8
	zq4Rows   = 3
)

// cNib4 is 16 bytes of 0x0F, the nibble mask of the AVX2 q4 float kernels;
// cIota16 holds the float32 values 0..15 and cShift16 the VPMULTISHIFTQB
// control that puts nibble j of a qword in the low bits of dword j.
var cNib4, cIota16, cShift16 Mem

// q4fKernels emits every q4 float-activation kernel.
func q4fKernels() {
	cNib4 = GLOBL("q4fnibbles", RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(4*i, U32(0x0F0F0F0F))
	}
	cIota16 = GLOBL("q4fiota", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(math.Float32bits(float32(i))))
	}
	cShift16 = GLOBL("q4fshift", RODATA|NOPTR)
	for m := 0; m < 8; m++ { // qword m: dword 2m from bit 8m, dword 2m+1 from bit 8m+4
		DATA(8*m, U32(uint32(8*m)))
		DATA(8*m+4, U32(uint32(8*m+4)))
	}
	eachTile(zq4Tokens, zq4Rows, q4fPanels)
}

// q4fPanels emits one kernel: for T tokens it sweeps `panels` consecutive
// panels of R weight rows:
//
//	s = sum_{c<k} x[t*cols+c] * sc[g,r] * (q[p*R+r, c] - sc[g,R+r])    g = c/G
//	y[t*ldy+p*R+r] = s, or += s when add != 0    for t < T, r < R, p < panels
//
// w holds the packed codes (rows of cols/2 bytes), sc the float32 scales and
// offsets of panel p at sc[p*sstep/4:], 2R per group. k is a positive
// multiple of G, which is a multiple of the step (16 or 8 columns); gmask is
// G/2-1 (a group ends where the negative byte index is a multiple of G/2).
// As in q8fPanels, the add form lets the caller split the columns into
// cache blocks. Registers: T activation pointers, R weight pointers, the
// negative byte index and the scale pointer.
func q4fPanels(z bool, T, R int) {
	name := q4fName(z, T, R)
	lanes := 8
	vec := YMM
	if z {
		lanes, vec = 16, ZMM
	}
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []float32, w []byte, sc []float32, cols, k, gmask, sstep, panels, add int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets (add == 0) or adds to (add != 0) y[t*ldy+p*%d+r] the sum_{c<k} x[t*cols+c]*sc[g,r]*(q[p*%d+r,c]-sc[g,%d+r]) for t < %d, r < %d, p < panels (see q4fPanels); k is a positive multiple of the group, a multiple of %d.", name, R, R, R, T, R, lanes))
	yLocal, ldyLocal, stepLocal, sLocal := panelLocals("sc")
	x0 := Load(Param("x").Base(), GP64())
	w0 := Load(Param("w").Base(), GP64())
	cols := Load(Param("cols"), GP64())
	kneg := Load(Param("k"), GP64()) // columns, then the negative byte index
	half := GP64()
	MOVQ(cols, half)
	SHRQ(U8(1), half)
	{
		step := GP64()
		IMUL3Q(U32(R), half, step)
		MOVQ(step, stepLocal)
	}
	xs := rowPointers(T, x0, kneg, cols, 4)
	SHRQ(U8(1), kneg)
	ws := rowPointers(R, w0, kneg, half, 1)
	NEGQ(kneg)
	idx, sp := GP64(), GP64()
	var ctrl VecVirtual
	if z {
		ctrl = vec()
		VMOVDQU64(cShift16, ctrl)
	}

	Label("panel")
	MOVQ(kneg, idx)
	MOVQ(sLocal, sp)
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
	// AVX-512: at each group's start, row r's table of the 16 dequantized
	// code values scale * (q - offset), q = 0..15 (exactly the weights'
	// values); a step then makes 16 weights with VPMULTISHIFTQB (the 8 code
	// bytes broadcast, nibble j to the low bits of dword j) and VPERMPS
	// (which reads the low 4 bits of each index).
	tabs := make([]VecVirtual, R)
	if z {
		Label("group")
		for r := range tabs {
			tabs[r] = vec()
			VMOVUPS(cIota16, tabs[r])
			VSUBPS_BCST(Mem{Base: sp, Disp: 4 * (R + r)}, tabs[r], tabs[r])
			VMULPS_BCST(Mem{Base: sp, Disp: 4 * r}, tabs[r], tabs[r])
		}
	}
	Label("loop")
	wv := make([]VecVirtual, R)
	xv := vec() // also the temporary of the AVX2 weight expansion
	for r := range wv {
		wv[r] = vec()
		wx, tx := wv[r].AsX(), xv.AsX()
		scale, offset := Mem{Base: sp, Disp: 4 * r}, Mem{Base: sp, Disp: 4 * (R + r)}
		if z {
			VPMULTISHIFTQB_BCST(Mem{Base: ws[r], Index: idx, Scale: 1}, ctrl, wv[r])
			VPERMPS(tabs[r], wv[r], wv[r])
		} else {
			VMOVD(Mem{Base: ws[r], Index: idx, Scale: 1}, wx) // 4 bytes
			VPMOVZXBW(wx, wx)
			VPSLLW(U8(4), wx, tx)
			VPOR(tx, wx, wx)
			VPAND(cNib4, wx, wx) // (w | w<<4) & 0x0F0F
			VPMOVZXBD(wx, wv[r])
			VCVTDQ2PS(wv[r], wv[r])
			VBROADCASTSS(offset, xv)
			VSUBPS(xv, wv[r], wv[r])
			VBROADCASTSS(scale, xv)
			VMULPS(xv, wv[r], wv[r])
		}
	}
	for t := 0; t < T; t++ {
		VMOVUPS(Mem{Base: xs[t], Index: idx, Scale: 8}, xv)
		for r := 0; r < R; r++ {
			VFMADD231PS(wv[r], xv, acc[t][r])
		}
	}
	ADDQ(U8(lanes/2), idx)
	JZ(LabelRef("reduce"))
	TESTQ(idx, paramMem("gmask"))
	JNZ(LabelRef("loop"))
	ADDQ(U8(8*R), sp) // the next group's scales and offsets
	if z {
		JMP(LabelRef("group"))
	} else {
		JMP(LabelRef("loop"))
	}

	// Per token: reduce, set or add. idx is free until the next panel and
	// serves as the output pointer.
	Label("reduce")
	yp := idx
	MOVQ(yLocal, yp)
	for t := 0; t < T; t++ {
		var s VecVirtual
		switch {
		case z && R == 3:
			s = acc[t][0]
			a3 := vec()
			VMOVUPS(acc[t][2], a3)
			zsum4(s, acc[t][1], acc[t][2], a3, vec())
		case z:
			s = acc[t][0]
			zsum1(s, vec())
		case R == 3:
			s = hsum4(acc[t][0], acc[t][1], acc[t][2], acc[t][2])
		default:
			s = hsum1(acc[t][0])
		}
		set := fmt.Sprintf("set%d", t)
		CMPQ(paramMem("add"), U8(0))
		JE(LabelRef(set))
		switch R { // read exactly the R outputs (y may end at a page's end)
		case 3:
			old := XMM()
			VMOVSD(Mem{Base: yp}, old)
			VINSERTPS(U8(0x20), Mem{Base: yp, Disp: 8}, old, old)
			VADDPS(old, s.AsX(), s.AsX())
		case 1:
			VADDSS(Mem{Base: yp}, s.AsX(), s.AsX())
		default:
			panic("q4fPanels: R must be 1 or 3")
		}
		Label(set)
		switch R {
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
	MOVQ(sLocal, sp)
	ADDQ(paramMem("sstep"), sp)
	MOVQ(sp, sLocal)
	for r := range ws {
		ADDQ(stepLocal, ws[r])
	}
	DECQ(paramMem("panels"))
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}
