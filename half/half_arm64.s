//go:build !noasm

#include "textflag.h"

// NEON bulk conversions between fp16, bfloat16 and float32, 8 values a loop.
// The Go assembler has no mnemonics for FCVTL/FCVTL2 (widen fp16) and
// FCVTN/FCVTN2 (narrow to fp16), so they are emitted as words:
//
//	FCVTL  Vd.4S, Vn.4H    0x0E217800 | n<<5 | d
//	FCVTL2 Vd.4S, Vn.8H    0x4E217800 | n<<5 | d
//	FCVTN  Vd.4H, Vn.4S    0x0E216800 | n<<5 | d
//	FCVTN2 Vd.8H, Vn.4S    0x4E216800 | n<<5 | d
//
// Under the default FPCR (round to nearest even, no flush to zero, NaNs
// propagated) they give what VCVTPH2PS and VCVTPS2PH give: widening is exact
// and quiets signaling NaNs, narrowing rounds to nearest even, keeps
// subnormals and makes a NaN quiet with the top bits of its payload.
#define FCVTL(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))
#define FCVTL2(d, n) WORD $(0x4E217800 | ((n)<<5) | (d))
#define FCVTN(d, n) WORD $(0x0E216800 | ((n)<<5) | (d))
#define FCVTN2(d, n) WORD $(0x4E216800 | ((n)<<5) | (d))

// func f16ToF32NEON(dst []float32, src []uint16)
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R2
	LSR  $3, R2, R2
	CBZ  R2, f16done

f16loop:
	VLD1.P 16(R1), [V0.H8]
	FCVTL(1, 0)
	FCVTL2(2, 0)
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $1, R2, R2
	BNE    f16loop

f16done:
	RET

// func f32ToF16NEON(dst []uint16, src []float32)
TEXT ·f32ToF16NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R2
	LSR  $3, R2, R2
	CBZ  R2, f32done

f32loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FCVTN(2, 0)
	FCVTN2(2, 1)
	VST1.P [V2.H8], 16(R0)
	SUBS   $1, R2, R2
	BNE    f32loop

f32done:
	RET

// func bf16ToF32NEON(dst []float32, src []uint16)
// A bfloat16 is the top half of a float32: interleaving zeros below each value
// (ZIP1/ZIP2 with a zero vector) widens it.
TEXT ·bf16ToF32NEON(SB), NOSPLIT, $0-48
	MOVD  dst_base+0(FP), R0
	MOVD  src_base+24(FP), R1
	MOVD  src_len+32(FP), R2
	LSR   $3, R2, R2
	CBZ   R2, bfdone
	VEOR  V3.B16, V3.B16, V3.B16

bfloop:
	VLD1.P 16(R1), [V0.H8]
	VZIP1  V0.H8, V3.H8, V1.H8
	VZIP2  V0.H8, V3.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $1, R2, R2
	BNE    bfloop

bfdone:
	RET
