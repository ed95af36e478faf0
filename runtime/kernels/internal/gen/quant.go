package main

// Quantized matrix kernels of the q4 weights times int8 activations (see
// runtime/kernels/q4.go and qacts.go for the formats and the Go twin; the q8
// weights multiply int16 activations, q16.go). Each kernel sweeps `panels`
// panels of R consecutive weight rows for T tokens, so one call does a whole
// GEMV (T = 1) or a whole cache block of a GEMM. Two instruction sets:
//
//   - avx2: the int8 dot products with VPMADDUBSW (unsigned x signed bytes to
//     saturating int16 pairs) and VPMADDWD (int16 pairs to int32). The q4
//     levels are unsigned and 2*15*127 is far from saturation.
//   - vnni: VPDPBUSD (AVX-512 VNNI on 256-bit vectors, so AVX512VL too)
//     does both in one instruction.
//
// Only 16 vector registers are used (VEX-encodable ones), so the tile is
// small: 3 tokens x 2 rows (a q4 row holds its low and high nibbles and the
// lane scales and offsets of its groups).

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Tile size of the q4 kernels (tokens x rows); each is also generated with
// 1 row for the leftover rows, and with 1..T tokens.
const (
	q4Tokens = 3
	q4Rows   = 2
)

// q4Groups are the supported q4 group sizes, in table order.
var q4Groups = []int{32, 64, 128}

var qISAs = []string{"AVX2", "VNNI"}

var cNib, cOnes16, cHalf2x4 Mem

// quantConsts emits the byte masks the quantized kernels use.
func quantConsts() {
	cNib = constVec("nibbleMask", 0x0F0F0F0F)
	cOnes16 = constVec("onesI16", 0x00010001)
	// VPSHUFB control spreading two fp16 values [a b ...] to [a a a a b b b b].
	cHalf2x4 = GLOBL("half2x4", RODATA|NOPTR)
	DATA(0, U32(0x01000100))
	DATA(4, U32(0x01000100))
	DATA(8, U32(0x03020302))
	DATA(12, U32(0x03020302))
}

// quantKernels emits every quantized kernel.
func quantKernels() {
	quantConsts()
	for _, isa := range qISAs {
		for _, g := range q4Groups {
			for t := 1; t <= q4Tokens; t++ {
				for _, r := range []int{1, q4Rows} {
					q4Panels(isa, g, t, r)
				}
			}
		}
	}
}

func q4Name(isa string, g, t, r int) string {
	return fmt.Sprintf("q4G%d%sT%dR%d", g, isa, t, r)
}

// tokenMem addresses token t's data: base0 + t*stride + disp, with base2 =
// base0 + 2*stride for t >= 2 when the scale-by-3 address is needed.
func tokenMem(base0, base2, stride Register, t, disp int) Mem {
	switch t {
	case 0:
		return Mem{Base: base0, Disp: disp}
	case 1:
		return Mem{Base: base0, Index: stride, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: base0, Index: stride, Scale: 2, Disp: disp}
	default:
		return Mem{Base: base2, Index: stride, Scale: 1, Disp: disp}
	}
}

// rowMem addresses weight row r (0 or 1) of the panel.
func rowMem(wp, wstr Register, r, disp int) Mem {
	if r == 0 {
		return Mem{Base: wp, Disp: disp}
	}
	return Mem{Base: wp, Index: wstr, Scale: 1, Disp: disp}
}

// zeroAcc returns T x R zeroed accumulators.
func zeroAcc(T, R int) [][]VecVirtual {
	acc := make([][]VecVirtual, T)
	for t := range acc {
		acc[t] = make([]VecVirtual, R)
		for r := range acc[t] {
			acc[t][r] = YMM()
			VXORPS(acc[t][r], acc[t][r], acc[t][r])
		}
	}
	return acc
}

// mulScale multiplies the low lane of s by the fp16 value at m.
func mulScale(m Mem, s VecVirtual) {
	g := GP32()
	MOVWLZX(m, g)
	f := XMM()
	VMOVD(g, f)
	VCVTPH2PS(f, f)
	VMULSS(f, s, s)
}

// q4Panels emits, for p < panels, r < R, t < T:
//
//	y[t*ldy+p*R+r] = sum_{j<k/64} sum_{lanes l} s_l * (dv_l*I_l - z_l*xs_l)
//
// where step j covers columns 64j..64j+63 of row p*R+r: I_l is lane l's
// integer dot product of the 32 low nibbles with the token's 32 even values
// plus the 32 high nibbles with its 32 odd values (Int8Acts' q4 order), dv_l
// and xs_l are the token's lane scale and lane sum (its meta), and s_l, z_l
// the fp16 scale and offset of the lane's group. For G = 128 one
// iteration is two steps sharing a group.
func q4Panels(isa string, G, T, R int) {
	vnni := isa == "VNNI"
	name := q4Name(isa, G, T, R)
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []int8, xstride int, m []float32, mstride int, w []byte, wstride int, scale, offset []uint16, sstride, k, panels int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sweeps q4 panels (group %d) of %d rows for %d tokens; k is a positive multiple of %d.", name, G, R, T, max(G, 64)))
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	sp := Load(Param("scale").Base(), GP64())
	zp := Load(Param("offset").Base(), GP64())
	panels := Load(Param("panels"), GP64())

	Label("panel")
	xp := Load(Param("x").Base(), GP64())
	xstr := Load(Param("xstride"), GP64())
	mp := Load(Param("m").Base(), GP64())
	mstr := Load(Param("mstride"), GP64())
	SHLQ(U8(2), mstr)
	wstr := Load(Param("wstride"), GP64())
	sstr := Load(Param("sstride"), GP64())
	SHLQ(U8(1), sstr)
	sub := max(1, G/64) // 64-column steps per iteration
	n := Load(Param("k"), GP64())
	SHRQ(U8(6), n)
	if sub == 2 {
		SHRQ(U8(1), n)
	}
	acc := zeroAcc(T, R)

	Label("loop")
	sv, zv := make([]VecVirtual, R), make([]VecVirtual, R)
	for r := 0; r < R; r++ {
		sv[r], zv[r] = YMM(), YMM()
		groupLanes(G, rowMem(sp, sstr, r, 0), sv[r])
		groupLanes(G, rowMem(zp, sstr, r, 0), zv[r])
	}
	for s := 0; s < sub; s++ {
		lo, hi := make([]VecVirtual, R), make([]VecVirtual, R)
		for r := 0; r < R; r++ {
			if T == 1 {
				PREFETCHT0(rowMem(wp, wstr, r, rowPrefetch+32*s))
			}
			lo[r], hi[r] = YMM(), YMM()
			VMOVDQU(rowMem(wp, wstr, r, 32*s), lo[r])
			VPSRLW(U8(4), lo[r], hi[r])
			VPAND(cNib, lo[r], lo[r])
			VPAND(cNib, hi[r], hi[r])
		}
		for t := 0; t < T; t++ {
			xe := tokenMem(xp, xp, xstr, t, 64*s)
			xo := tokenMem(xp, xp, xstr, t, 64*s+32)
			dv := tokenMem(mp, mp, mstr, t, 64*s)
			xs := tokenMem(mp, mp, mstr, t, 64*s+32)
			for r := 0; r < R; r++ {
				i := YMM()
				if vnni {
					VPXOR(i, i, i)
					VPDPBUSD(xe, lo[r], i)
					VPDPBUSD(xo, hi[r], i)
				} else {
					j := YMM()
					VPMADDUBSW(xe, lo[r], i)
					VPMADDUBSW(xo, hi[r], j)
					VPADDW(j, i, i)
					VPMADDWD(cOnes16, i, i)
				}
				VCVTDQ2PS(i, i)
				VMULPS(dv, i, i)
				VFNMADD231PS(xs, zv[r], i)
				VFMADD231PS(sv[r], i, acc[t][r])
			}
		}
	}
	ADDQ(U8(32*sub), wp)
	ADDQ(U8(64*sub), xp)
	ADDQ(U8(64*sub), mp)
	step := 2 // bytes of fp16 group parameters per iteration
	if G == 32 {
		step = 4
	}
	ADDQ(U8(step), sp)
	ADDQ(U8(step), zp)
	DECQ(n)
	JNZ(LabelRef("loop"))

	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	yt := GP64()
	MOVQ(yp, yt)
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			s := hsum1(acc[t][r])
			VMOVSS(s, Mem{Base: yt, Disp: 4 * r})
		}
		if t+1 < T {
			ADDQ(ldy, yt)
		}
	}
	// Next panel: move w, scale and offset on by R rows, less what the loop
	// walked (k/2 bytes of nibbles, k/G fp16 values of each parameter).
	ADDQ(U8(4*R), yp)
	k := Load(Param("k"), GP64())
	adv := Load(Param("wstride"), GP64())
	if R == 2 {
		SHLQ(U8(1), adv)
	}
	kb := GP64()
	MOVQ(k, kb)
	SHRQ(U8(1), kb)
	SUBQ(kb, adv)
	ADDQ(adv, wp)
	sadv := Load(Param("sstride"), GP64())
	SHLQ(U8(uint8(R)), sadv) // R rows of fp16 values: sstride*2*R bytes
	shift := map[int]uint8{32: 4, 64: 5, 128: 6}[G]
	SHRQ(U8(shift), k) // k/G values, 2 bytes each: k >> log2(G/2)
	SUBQ(k, sadv)
	ADDQ(sadv, sp)
	ADDQ(sadv, zp)
	DECQ(panels)
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}

// groupLanes loads the fp16 group parameter(s) of one step at m and widens
// them to the 8 lanes: for G = 32 the step spans two groups, lanes 0-3 get
// the first and 4-7 the second; otherwise every lane gets the one group's.
func groupLanes(G int, m Mem, v VecVirtual) {
	x := XMM()
	if G == 32 {
		VMOVD(m, x)
		VPSHUFB(cHalf2x4, x, x)
	} else {
		VPBROADCASTW(m, x)
	}
	VCVTPH2PS(x, v)
}

// writeQuantTables writes the Go tables of the quantized kernels.
func writeQuantTables(path string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gen. DO NOT EDIT.\n\n//go:build !noasm\n\npackage kernels\n\n")
	fmt.Fprintf(&b, "const (\n\t// q4Tokens x q4Rows is the tile of the q4 kernels.\n\tq4Tokens = %d\n\tq4Rows = %d\n)\n\n", q4Tokens, q4Rows)
	for _, isa := range qISAs {
		fmt.Fprintf(&b, "// q4%sPanels holds the q4 kernels indexed by [group 32, 64, 128][tokens-1][0 for 1 row, 1 for q4Rows].\n", isa)
		fmt.Fprintf(&b, "var q4%sPanels = [3][q4Tokens][2]q4PanelFunc{\n", isa)
		for _, g := range q4Groups {
			b.WriteString("{")
			for t := 1; t <= q4Tokens; t++ {
				fmt.Fprintf(&b, "{%s, %s},\n", q4Name(isa, g, t, 1), q4Name(isa, g, t, q4Rows))
			}
			b.WriteString("},\n")
		}
		b.WriteString("}\n\n")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
