package main

// The mxfp4 kernels (`gen -set mxfp4`, written apart from the other kernels into
// mxfp4_amd64.s and mxfp4stubs_amd64.go; the arm64 ones are mxfp4_arm64.s, by hand): the GEMV
// and the dequantization of mxfp4 weights (runtime/kernels/mxfp4.go has the format and the Go
// twins). A 32-column block is 16 code bytes and one E8M0 scale byte; per block the kernel
// looks the scale's float32 value 2^(e−127) up in a 256-entry table and multiplies the table
// of the 16 code values by it (exact: powers of two times numbers of two significant bits),
// then makes each weight by a table lookup:
//
//   - AVX-512: VPERMPS reads the low 4 bits of each index, so the 16 signed values are one ZMM
//     table and a step of 16 weights is VPMOVZXBW of 8 code bytes, (w | w<<4) & 0x0F0F (the
//     low nibble of byte k to byte 2k, its high nibble to byte 2k+1), VPMOVZXBD and VPERMPS.
//   - AVX2: VPERMPS on YMM reads 3 bits, so the table holds the 8 magnitudes and the code's
//     sign bit (bit 3) is shifted to bit 31, masked and XORed in: the same weight, -0 included.
//
// The weights come out exactly as quant.DequantizeRowMXFP4's; the GEMV FMAs them with the
// activations into 4 (AVX2) or 2 (AVX-512) accumulators per row.

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The mxfp4 constants: the 8 magnitudes, the 16 signed values, every E8M0 scale, the nibble
// mask, the float32 sign bit.
var cMXMag, cMXVal, cMXScale, cMXNib, cMXSign Mem

// mxfp4Main generates the mxfp4 set (called by main for -set mxfp4).
func mxfp4Main() {
	ConstraintExpr("!noasm")
	mag := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	cMXMag = GLOBL("mxfp4mag", RODATA|NOPTR)
	for i, v := range mag {
		DATA(4*i, U32(math.Float32bits(v)))
	}
	cMXVal = GLOBL("mxfp4val", RODATA|NOPTR)
	for q := 0; q < 16; q++ {
		bits := math.Float32bits(mag[q&7])
		if q >= 8 {
			bits |= 1 << 31 // -0 for code 8
		}
		DATA(4*q, U32(bits))
	}
	cMXScale = GLOBL("mxfp4e8m0", RODATA|NOPTR)
	for e := 0; e < 256; e++ {
		bits := uint32(e) << 23
		switch e {
		case 0:
			bits = 0x00400000 // 2^-127, a subnormal
		case 255:
			bits = 0x7FC00000 // NaN
		}
		DATA(4*e, U32(bits))
	}
	cMXNib = GLOBL("mxfp4nib", RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		DATA(4*i, U32(0x0F0F0F0F))
	}
	cMXSign = GLOBL("mxfp4sign", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(1<<31))
	}
	for _, z := range []bool{false, true} {
		mxfp4MatVec(z)
		mxfp4Dequant(z)
	}
	Generate()
}

// mxfp4Suffix names a kernel's instruction set.
func mxfp4Suffix(z bool) string {
	if z {
		return "AVX512"
	}
	return "AVX2"
}

// mxfp4Table returns, for the block whose scale byte is at ep, the table of the block's
// weights: the 16 signed values times the scale (AVX-512) or the 8 magnitudes times it (AVX2).
// tab holds the address of the E8M0 table.
func mxfp4Table(z bool, ep, tab Register) VecVirtual {
	e := GP64()
	MOVBQZX(Mem{Base: ep}, e)
	s := YMM()
	values := cMXMag
	if z {
		s, values = ZMM(), cMXVal
	}
	VBROADCASTSS(Mem{Base: tab, Index: e, Scale: 4}, s)
	VMULPS(values, s, s)
	return s
}

// mxfp4Codes expands 8 code bytes at m to their 16 codes, one a byte in order (the low nibble
// of byte k first), in an XMM register.
func mxfp4Codes(m Mem) VecVirtual {
	x, t := XMM(), XMM()
	VPMOVZXBW(m, x)
	VPSLLW(U8(4), x, t)
	VPOR(t, x, x)
	VPAND(cMXNib, x, x)
	return x
}

// mxfp4Weights calls use with the 16 weights of the 8 code bytes at m (AVX-512: one ZMM; AVX2:
// two YMM of 8) made from the block's table t.
func mxfp4Weights(z bool, m Mem, t VecVirtual, use func(i int, w VecVirtual)) {
	x := mxfp4Codes(m)
	if z {
		q := ZMM()
		VPMOVZXBD(x, q)
		VPERMPS(t, q, q)
		use(0, q)
		return
	}
	for i := 0; i < 2; i++ {
		if i == 1 {
			VPSRLDQ(U8(8), x, x)
		}
		q, w := YMM(), YMM()
		VPMOVZXBD(x, q)
		VPERMPS(t, q, w)
		VPSLLD(U8(28), q, q) // the sign bit, bit 3 of the code, to bit 31
		VANDPS(cMXSign, q, q)
		VXORPS(q, w, w)
		use(i, w)
	}
}

// mxfp4MatVec emits the GEMV: y[r] = sum_c W[r,c]*x[c] for r < rows, each row blocks blocks of
// 32 columns; the codes and scales of the rows follow one another.
func mxfp4MatVec(z bool) {
	name := "mxfp4MatVec" + mxfp4Suffix(z)
	TEXT(name, NOSPLIT, "func(y []float32, w, e []byte, x []float32, rows, blocks int)")
	Pragma("noescape")
	Doc(name + " sets y[r] = sum_c W[r,c]*x[c] for r < rows, W the mxfp4 matrix of codes w and scales e of blocks*32 columns; rows and blocks are positive.")
	yp := Load(Param("y").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	ep := Load(Param("e").Base(), GP64())
	xbase := Load(Param("x").Base(), GP64())
	rows := Load(Param("rows"), GP64())
	tab := GP64()
	LEAQ(cMXScale, tab)

	Label("row")
	xp, n := GP64(), GP64()
	MOVQ(xbase, xp)
	Load(Param("blocks"), n)
	nacc := 4
	if z {
		nacc = 2
	}
	acc := make([]VecVirtual, nacc)
	for i := range acc {
		if z {
			acc[i] = ZMM()
			zzero(acc[i])
		} else {
			acc[i] = YMM()
			VXORPS(acc[i], acc[i], acc[i])
		}
	}

	Label("block")
	PREFETCHT0(Mem{Base: wp, Disp: rowPrefetch})
	t := mxfp4Table(z, ep, tab)
	for h := 0; h < 2; h++ {
		// Half h of the block is columns 16h..16h+15: one AVX-512 step, or two AVX2 steps of 8
		// (i = 0, 1), each into an accumulator of its own.
		mxfp4Weights(z, Mem{Base: wp, Disp: 8 * h}, t, func(i int, w VecVirtual) {
			k := h
			if !z {
				k = 2*h + i
			}
			VFMADD231PS(Mem{Base: xp, Disp: 64*h + 32*i}, w, acc[k])
		})
	}
	ADDQ(U8(16), wp)
	INCQ(ep)
	ADDQ(U32(128), xp)
	DECQ(n)
	JNZ(LabelRef("block"))

	if z {
		VADDPS(acc[1], acc[0], acc[0])
		zsum1(acc[0], acc[1])
		VMOVSS(acc[0].AsX(), Mem{Base: yp})
	} else {
		VADDPS(acc[1], acc[0], acc[0])
		VADDPS(acc[3], acc[2], acc[2])
		VADDPS(acc[2], acc[0], acc[0])
		VMOVSS(hsum1(acc[0]), Mem{Base: yp})
	}
	ADDQ(U8(4), yp)
	DECQ(rows)
	JNZ(LabelRef("row"))
	VZEROUPPER()
	RET()
}

// mxfp4Dequant emits the dequantization of blocks consecutive blocks: dst[32b+i] = W of block
// b, column i.
func mxfp4Dequant(z bool) {
	name := "mxfp4Dequant" + mxfp4Suffix(z)
	TEXT(name, NOSPLIT, "func(dst []float32, w, e []byte, blocks int)")
	Pragma("noescape")
	Doc(name + " writes the 32*blocks weights of the mxfp4 blocks of codes w and scales e to dst; blocks is positive.")
	dp := Load(Param("dst").Base(), GP64())
	wp := Load(Param("w").Base(), GP64())
	ep := Load(Param("e").Base(), GP64())
	n := Load(Param("blocks"), GP64())
	tab := GP64()
	LEAQ(cMXScale, tab)

	Label("block")
	t := mxfp4Table(z, ep, tab)
	for h := 0; h < 2; h++ {
		mxfp4Weights(z, Mem{Base: wp, Disp: 8 * h}, t, func(i int, w VecVirtual) {
			VMOVUPS(w, Mem{Base: dp, Disp: 64*h + 32*i})
		})
	}
	ADDQ(U8(16), wp)
	INCQ(ep)
	ADDQ(U32(128), dp)
	DECQ(n)
	JNZ(LabelRef("block"))
	VZEROUPPER()
	RET()
}
