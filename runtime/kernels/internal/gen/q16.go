package main

// The q8 kernels: int8 weights (one fp16 scale per row) times activations
// quantized to 16-bit integers per block of 32 (Int16Acts, W8A16; see
// runtime/kernels/q8.go and qacts16.go for the format and the Go twin).
// `gen -set q16` writes them apart from the other kernels: the amd64 ones
// with avo into q16kernels_amd64.s (+ stubs and tables), the arm64 ones as
// text into q16kernels_arm64.s (+ declarations and tables), since avo
// targets amd64 only.
//
// Every kernel sweeps `panels` panels of R consecutive weight rows for T
// tokens (tile T x R, like the other quantized kernels: 4 x 2 with 1-row
// and 1..3-token variants for the leftovers), and reads each 32-byte block
// of weights once per tile:
//
//   - avx2: VPMOVSXBW widens the block's weights to 2 x 16 int16 (once per
//     tile, reused by its T tokens), and per token VPMADDWD x 2 + VPADDD give
//     8 int32 lanes, exact (each lane sums 4 products, < 2^24 in magnitude,
//     so even its float32 conversion is exact).
//   - vnni: the same with the second VPMADDWD + VPADDD fused into VPDPWSSD
//     (AVX512_VNNI on 256-bit vectors, so AVX512VL too). The lanes hold the
//     same integers as avx2's, so both give bit-identical results.
//   - neon: Int16Acts' two int8 planes (Q = 254*q1 + q2): per token and row
//     four SDOTs (q1 and q2 against the same two weight registers), then
//     MLA lane += 254 * q1 lane, all exact in int32. SDOT does 16 multiplies
//     per instruction, SMLAL (int16) 4, which is why NEON splits the planes
//     while amd64, where VPDPWSSD / VPMADDWD handle int16 at the cost of one
//     widening per tile, multiplies Q directly (splitting there would take
//     two dot instructions plus a combine per token; measured in
//     docs/quantization.md).
//
// Per block: float32(lanes) * d_block into a float32 accumulator per tile
// element; the row's scale multiplies the final sum (amd64 in assembly, arm64
// in the Go caller).

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	kernelSet   = flag.String("set", "", `"q16": write only the q8 x int16-activation kernels (see q16.go); "mxfp4": only the mxfp4 kernels (see mxfp4.go)`)
	q16TilesOut = flag.String("q16tiles", "", "with -set q16, write the Go tables of the amd64 kernels to this file")
	neonGoOut   = flag.String("neongo", "", "with -set q16, write the Go declarations and tables of the arm64 kernels to this file")
)

// Tile of the q8 kernels, tokens x rows (each also generated with 1 row and
// with 1..q16Tokens tokens for the leftovers). 4 x 2 needs 8 accumulators,
// 4 widened weight vectors, the block scale and 1-2 temporaries: 15 of the
// 16 VEX-encodable YMM registers.
const (
	q16Tokens = 4
	q16Rows   = 2
)

func q16Name(isa string, t, r int) string { return fmt.Sprintf("q8A16%sT%dR%d", isa, t, r) }

// q16Main generates the q16 set (called by main for -set q16).
func q16Main() {
	ConstraintExpr("!noasm")
	for _, isa := range qISAs {
		for t := 1; t <= q16Tokens; t++ {
			for _, r := range []int{1, q16Rows} {
				q16Panels(isa, t, r)
			}
		}
	}
	Generate()
	if *q16TilesOut != "" {
		writeGo(*q16TilesOut, q16Tables("AVX2", "VNNI"))
	}
	if *neonOut != "" {
		writeNEON16(*neonOut)
	}
	if *neonGoOut != "" {
		writeGo(*neonGoOut, neonDecls()+q16Tables("NEON"))
	}
}

// q16Panels emits, for p < panels, r < R, t < T:
//
//	y[t*ldy+p*R+r] = scale[p*R+r] * sum_{b<k/32} d[t*dstride+b] * I(b)
//
// with I(b) the integer dot product of weight row p*R+r and token t's int16
// values over block b; x holds xstride int16 per token.
func q16Panels(isa string, T, R int) {
	vnni := isa == "VNNI"
	name := q16Name(isa, T, R)
	TEXT(name, NOSPLIT, "func(y []float32, ldy int, x []int16, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sweeps q8 panels of %d rows for %d tokens of int16 activations; k is a positive multiple of 32.", name, R, T))
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	sp := Load(Param("scale").Base(), GP64())
	panels := Load(Param("panels"), GP64())

	Label("panel")
	xp := Load(Param("x").Base(), GP64())
	xstr := Load(Param("xstride"), GP64())
	SHLQ(U8(1), xstr)
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
	lo, hi := make([]VecVirtual, R), make([]VecVirtual, R)
	for r := 0; r < R; r++ {
		if T == 1 {
			PREFETCHT0(rowMem(wp, wstr, r, rowPrefetch))
		}
		lo[r], hi[r] = YMM(), YMM()
		VPMOVSXBW(rowMem(wp, wstr, r, 0), lo[r])
		VPMOVSXBW(rowMem(wp, wstr, r, 16), hi[r])
	}
	for t := 0; t < T; t++ {
		db := YMM()
		VBROADCASTSS(tokenMem(dp, dp2, dstr, t, 0), db)
		for r := 0; r < R; r++ {
			i := YMM()
			VPMADDWD(tokenMem(xp, xp2, xstr, t, 0), lo[r], i)
			if vnni {
				VPDPWSSD(tokenMem(xp, xp2, xstr, t, 32), hi[r], i)
			} else {
				j := YMM()
				VPMADDWD(tokenMem(xp, xp2, xstr, t, 32), hi[r], j)
				VPADDD(j, i, i)
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
	// Next panel: rows move on by R, w's pointer back by the k columns the
	// loop walked.
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

// q16Tables returns the Go tables of the q8 kernels of the given ISAs.
func q16Tables(isas ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "const (\n\t// q16Tokens x q16Rows is the tile of the q8 (W8A16) kernels.\n\tq16Tokens = %d\n\tq16Rows = %d\n)\n\n", q16Tokens, q16Rows)
	for _, isa := range isas {
		fmt.Fprintf(&b, "// q8A16%sPanels holds the q8 kernels indexed by [tokens-1][0 for 1 row, 1 for q16Rows].\n", isa)
		fmt.Fprintf(&b, "var q8A16%sPanels = [q16Tokens][2]q16PanelFunc{\n", isa)
		for t := 1; t <= q16Tokens; t++ {
			fmt.Fprintf(&b, "{%s, %s},\n", q16Name(isa, t, 1), q16Name(isa, t, q16Rows))
		}
		b.WriteString("}\n\n")
	}
	return b.String()
}

// writeGo writes a generated Go file of package kernels built without the
// noasm tag, formatted.
func writeGo(path, body string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gen. DO NOT EDIT.\n\n//go:build !noasm\n\npackage kernels\n\n%s", body)
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
