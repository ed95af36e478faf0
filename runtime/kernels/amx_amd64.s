//go:build !noasm

#include "textflag.h"

// The AMX prefill product's assembly (amx.go, amx_amd64.go): the activation split into three
// bfloat16 parts, the weight pack into B tiles, and the tile micro-kernel. Written by hand, not
// by internal/gen: avo knows no AMX (and neither does Go's assembler, see below). Each function
// has a Go twin, and the tests compare them (amx_test.go, amx_amd64_test.go).

// AMX instructions, which Go's assembler does not know, as the bytes GNU as (binutils 2.40)
// assembles the AT&T form in each comment to; TestAMXEncodings checks them. Registers: tmm0-2
// accumulate C, tmm3 and tmm7 take turns holding A (an activation part), tmm4-6 hold B.
#define LDTILECFG_AX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
#define TILEZERO_C0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero %tmm0
#define TILEZERO_C1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero %tmm1
#define TILEZERO_C2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero %tmm2
#define LOAD_C0 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x0e // tileloadd (%rsi,%r9,1), %tmm0
#define LOAD_C1 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x0e; BYTE $0x40 // tileloadd 64(%rsi,%r9,1), %tmm1
#define LOAD_C2 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x94; BYTE $0x0e; BYTE $0x80; BYTE $0x00; BYTE $0x00; BYTE $0x00 // tileloadd 128(%rsi,%r9,1), %tmm2
#define STORE_C0 BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x0e // tilestored %tmm0, (%rsi,%r9,1)
#define STORE_C1 BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x0e; BYTE $0x40 // tilestored %tmm1, 64(%rsi,%r9,1)
#define STORE_C2 BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x94; BYTE $0x0e; BYTE $0x80; BYTE $0x00; BYTE $0x00; BYTE $0x00 // tilestored %tmm2, 128(%rsi,%r9,1)
#define LOAD_B0 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x2b // tileloadd (%r11,%r13,1), %tmm4
#define LOAD_B1 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x2b; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd 1024(%r11,%r13,1), %tmm5
#define LOAD_B2 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x2b; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tileloadd 2048(%r11,%r13,1), %tmm6
#define LOAD_L0 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x2a // tileloadd (%rdx,%r13,1), %tmm4
#define LOAD_L1 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x2a; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd 1024(%rdx,%r13,1), %tmm5
#define LOAD_L2 BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x2a; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tileloadd 2048(%rdx,%r13,1), %tmm6
#define LOAD_HI_A3 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x1c; BYTE $0x28 // tileloadd (%r8,%r13,1), %tmm3
#define LOAD_MID_A7 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0xbc; BYTE $0x28; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd 1024(%r8,%r13,1), %tmm7
#define LOAD_LO_A3 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x9c; BYTE $0x28; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tileloadd 2048(%r8,%r13,1), %tmm3
#define LOAD_HI_A7 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x28 // tileloadd (%r8,%r13,1), %tmm7
#define LOAD_MID_A3 BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x9c; BYTE $0x28; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd 1024(%r8,%r13,1), %tmm3
#define DP_C0_A3 BYTE $0xc4; BYTE $0xe2; BYTE $0x5a; BYTE $0x5c; BYTE $0xc3 // tdpbf16ps %tmm4, %tmm3, %tmm0
#define DP_C1_A3 BYTE $0xc4; BYTE $0xe2; BYTE $0x52; BYTE $0x5c; BYTE $0xcb // tdpbf16ps %tmm5, %tmm3, %tmm1
#define DP_C2_A3 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd3 // tdpbf16ps %tmm6, %tmm3, %tmm2
#define DP_C0_A7 BYTE $0xc4; BYTE $0xe2; BYTE $0x5a; BYTE $0x5c; BYTE $0xc7 // tdpbf16ps %tmm4, %tmm7, %tmm0
#define DP_C1_A7 BYTE $0xc4; BYTE $0xe2; BYTE $0x52; BYTE $0x5c; BYTE $0xcf // tdpbf16ps %tmm5, %tmm7, %tmm1
#define DP_C2_A7 BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd7 // tdpbf16ps %tmm6, %tmm7, %tmm2

// TRANSPOSE16 transposes the 16x16 dword matrix in Z0-Z15 (row i in Zi) in place, with
// Z16-Z31 as scratch: afterwards Zi holds column i (dword j of row j). Four rounds:
// dword and qword interleaves within 128-bit lanes, then two rounds of lane shuffles.
#define TRANSPOSE16 \
	VPUNPCKLDQ Z1, Z0, Z16; \
	VPUNPCKHDQ Z1, Z0, Z17; \
	VPUNPCKLDQ Z3, Z2, Z18; \
	VPUNPCKHDQ Z3, Z2, Z19; \
	VPUNPCKLDQ Z5, Z4, Z20; \
	VPUNPCKHDQ Z5, Z4, Z21; \
	VPUNPCKLDQ Z7, Z6, Z22; \
	VPUNPCKHDQ Z7, Z6, Z23; \
	VPUNPCKLDQ Z9, Z8, Z24; \
	VPUNPCKHDQ Z9, Z8, Z25; \
	VPUNPCKLDQ Z11, Z10, Z26; \
	VPUNPCKHDQ Z11, Z10, Z27; \
	VPUNPCKLDQ Z13, Z12, Z28; \
	VPUNPCKHDQ Z13, Z12, Z29; \
	VPUNPCKLDQ Z15, Z14, Z30; \
	VPUNPCKHDQ Z15, Z14, Z31; \
	VPUNPCKLQDQ Z18, Z16, Z0; \
	VPUNPCKHQDQ Z18, Z16, Z1; \
	VPUNPCKLQDQ Z19, Z17, Z2; \
	VPUNPCKHQDQ Z19, Z17, Z3; \
	VPUNPCKLQDQ Z22, Z20, Z4; \
	VPUNPCKHQDQ Z22, Z20, Z5; \
	VPUNPCKLQDQ Z23, Z21, Z6; \
	VPUNPCKHQDQ Z23, Z21, Z7; \
	VPUNPCKLQDQ Z26, Z24, Z8; \
	VPUNPCKHQDQ Z26, Z24, Z9; \
	VPUNPCKLQDQ Z27, Z25, Z10; \
	VPUNPCKHQDQ Z27, Z25, Z11; \
	VPUNPCKLQDQ Z30, Z28, Z12; \
	VPUNPCKHQDQ Z30, Z28, Z13; \
	VPUNPCKLQDQ Z31, Z29, Z14; \
	VPUNPCKHQDQ Z31, Z29, Z15; \
	VSHUFI32X4 $0x88, Z4, Z0, Z16; \
	VSHUFI32X4 $0x88, Z5, Z1, Z17; \
	VSHUFI32X4 $0x88, Z6, Z2, Z18; \
	VSHUFI32X4 $0x88, Z7, Z3, Z19; \
	VSHUFI32X4 $0xdd, Z4, Z0, Z20; \
	VSHUFI32X4 $0xdd, Z5, Z1, Z21; \
	VSHUFI32X4 $0xdd, Z6, Z2, Z22; \
	VSHUFI32X4 $0xdd, Z7, Z3, Z23; \
	VSHUFI32X4 $0x88, Z12, Z8, Z24; \
	VSHUFI32X4 $0x88, Z13, Z9, Z25; \
	VSHUFI32X4 $0x88, Z14, Z10, Z26; \
	VSHUFI32X4 $0x88, Z15, Z11, Z27; \
	VSHUFI32X4 $0xdd, Z12, Z8, Z28; \
	VSHUFI32X4 $0xdd, Z13, Z9, Z29; \
	VSHUFI32X4 $0xdd, Z14, Z10, Z30; \
	VSHUFI32X4 $0xdd, Z15, Z11, Z31; \
	VSHUFI32X4 $0x88, Z24, Z16, Z0; \
	VSHUFI32X4 $0x88, Z25, Z17, Z1; \
	VSHUFI32X4 $0x88, Z26, Z18, Z2; \
	VSHUFI32X4 $0x88, Z27, Z19, Z3; \
	VSHUFI32X4 $0x88, Z28, Z20, Z4; \
	VSHUFI32X4 $0x88, Z29, Z21, Z5; \
	VSHUFI32X4 $0x88, Z30, Z22, Z6; \
	VSHUFI32X4 $0x88, Z31, Z23, Z7; \
	VSHUFI32X4 $0xdd, Z24, Z16, Z8; \
	VSHUFI32X4 $0xdd, Z25, Z17, Z9; \
	VSHUFI32X4 $0xdd, Z26, Z18, Z10; \
	VSHUFI32X4 $0xdd, Z27, Z19, Z11; \
	VSHUFI32X4 $0xdd, Z28, Z20, Z12; \
	VSHUFI32X4 $0xdd, Z29, Z21, Z13; \
	VSHUFI32X4 $0xdd, Z30, Z22, Z14; \
	VSHUFI32X4 $0xdd, Z31, Z23, Z15

// amxPairIdx: VPERMT2W indices that gather the high 16-bit half of each of the 32 float32 in
// two ZMM registers, in order: word 2i+1 of the 64-word table the two registers make. On
// float32 whose low 16 bits are zero that half is their exact bfloat16.
DATA amxPairIdx<>+0(SB)/8, $0x0007000500030001
DATA amxPairIdx<>+8(SB)/8, $0x000f000d000b0009
DATA amxPairIdx<>+16(SB)/8, $0x0017001500130011
DATA amxPairIdx<>+24(SB)/8, $0x001f001d001b0019
DATA amxPairIdx<>+32(SB)/8, $0x0027002500230021
DATA amxPairIdx<>+40(SB)/8, $0x002f002d002b0029
DATA amxPairIdx<>+48(SB)/8, $0x0037003500330031
DATA amxPairIdx<>+56(SB)/8, $0x003f003d003b0039
GLOBL amxPairIdx<>(SB), RODATA|NOPTR, $64

// amxHighMask keeps a float32's sign, exponent and top 7 mantissa bits: its bfloat16 part,
// rounded toward zero, so that x - (x & mask) is exact.
DATA amxHighMask<>+0(SB)/4, $0xffff0000
GLOBL amxHighMask<>(SB), RODATA|NOPTR, $4

// func amxSplitAsm(dst *uint16, x *float32, chunks int)
// Splits chunks x 32 float32 into bfloat16 parts x = hi + mid + lo, exactly (splitBF16x3Go),
// into the A-tile rows of amxSplitRow's layout: chunk c's parts at dst + c*3072 bytes + 0
// (hi), 1024 (mid) and 2048 (lo).
TEXT ·amxSplitAsm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ chunks+16(FP), CX
	TESTQ CX, CX
	JZ   splitDone
	VMOVDQU64    amxPairIdx<>(SB), Z30
	VPBROADCASTD amxHighMask<>(SB), Z31

splitLoop:
	VMOVUPS  (SI), Z0
	VMOVUPS  64(SI), Z1
	VPANDD   Z31, Z0, Z2 // hi
	VPANDD   Z31, Z1, Z3
	VSUBPS   Z2, Z0, Z0  // x - hi, exact
	VSUBPS   Z3, Z1, Z1
	VPANDD   Z31, Z0, Z4 // mid
	VPANDD   Z31, Z1, Z5
	VSUBPS   Z4, Z0, Z0  // lo = x - hi - mid, exact and a bfloat16
	VSUBPS   Z5, Z1, Z1
	VPERMT2W Z3, Z30, Z2
	VPERMT2W Z5, Z30, Z4
	VPERMT2W Z1, Z30, Z0
	VMOVDQU16 Z2, (DI)
	VMOVDQU16 Z4, 1024(DI)
	VMOVDQU16 Z0, 2048(DI)
	ADDQ $128, SI
	ADDQ $3072, DI
	DECQ CX
	JNZ  splitLoop

splitDone:
	VZEROUPPER
	RET

// STORE_TILE writes Z0-Z15 (tile rows 0-15) to the 1 KiB tile at (BX).
#define STORE_TILE \
	VMOVDQU32 Z0, (BX); VMOVDQU32 Z1, 64(BX); VMOVDQU32 Z2, 128(BX); VMOVDQU32 Z3, 192(BX); \
	VMOVDQU32 Z4, 256(BX); VMOVDQU32 Z5, 320(BX); VMOVDQU32 Z6, 384(BX); VMOVDQU32 Z7, 448(BX); \
	VMOVDQU32 Z8, 512(BX); VMOVDQU32 Z9, 576(BX); VMOVDQU32 Z10, 640(BX); VMOVDQU32 Z11, 704(BX); \
	VMOVDQU32 Z12, 768(BX); VMOVDQU32 Z13, 832(BX); VMOVDQU32 Z14, 896(BX); VMOVDQU32 Z15, 960(BX)

// PACK_HIGH_ROW(zr) converts weight row (DI) to float32, packs the high halves (the bfloat16
// high parts: a float32 with its low 16 bits cleared) into zr as 16 dwords, each the pair of
// two adjacent columns, ORs the float32 values into Z27 (a remainder w - high is nonzero just
// where those low 16 bits are), and steps DI to the next row.
#define PACK_HIGH_ROW(zr) \
	VCVTPH2PS  (DI), zr; \
	VCVTPH2PS  32(DI), Z17; \
	VPTERNLOGD $0xfe, Z17, zr, Z27; \
	VPERMT2W   Z17, Z28, zr; \
	ADDQ DX, DI

// PACK_LOW_ROW(zr) converts weight row (DI) to float32, packs the remainders w - high (exact,
// and bfloat16: at most 3 significant bits) into zr as PACK_HIGH_ROW packs the high parts, ORs
// them into Z27, and steps DI to the next row (Z29 = amxHighMask).
#define PACK_LOW_ROW(zr) \
	VCVTPH2PS  (DI), zr; \
	VCVTPH2PS  32(DI), Z17; \
	VPANDD     Z29, zr, Z18; \
	VPANDD     Z29, Z17, Z19; \
	VSUBPS     Z18, zr, zr; \
	VSUBPS     Z19, Z17, Z17; \
	VPTERNLOGD $0xfe, Z17, zr, Z27; \
	VPERMT2W   Z17, Z28, zr; \
	ADDQ DX, DI

// PACK_Q8_ROW(zr) widens the 32 int8 codes of row (DI) to float32 (exactly), packs them as
// bfloat16 into zr as PACK_HIGH_ROW packs high parts, and steps DI to the next row.
#define PACK_Q8_ROW(zr) \
	VPMOVSXBD  (DI), zr; \
	VPMOVSXBD  16(DI), Z17; \
	VCVTDQ2PS  zr, zr; \
	VCVTDQ2PS  Z17, Z17; \
	VPERMT2W   Z17, Z28, zr; \
	ADDQ DX, DI

#define PACK_ROWS(row) \
	MOVQ SI, DI; \
	row(Z0); row(Z1); row(Z2); row(Z3); row(Z4); row(Z5); row(Z6); row(Z7); \
	row(Z8); row(Z9); row(Z10); row(Z11); row(Z12); row(Z13); row(Z14); row(Z15)

// PACK_CHUNK(row) packs the chunk of 16 rows at SI, each with row (PACK_HIGH_ROW or
// PACK_LOW_ROW), into the tile at AX, and ORs into R9 whether any packed value had nonzero low
// 16 bits in float32 (high pass: whether any remainder is nonzero). The transpose takes Z16-Z31,
// so the constants are loaded again for each chunk.
#define PACK_CHUNK(row) \
	VMOVDQU64    amxPairIdx<>(SB), Z28; \
	VPBROADCASTD amxHighMask<>(SB), Z29; \
	VPXORD       Z27, Z27, Z27; \
	PACK_ROWS(row); \
	VPANDND      Z27, Z29, Z27; \
	VPTESTMD     Z27, Z27, K1; \
	KMOVW K1, BX; \
	ORL  BX, R9; \
	TRANSPOSE16; \
	MOVQ AX, BX; \
	STORE_TILE

// func amxPackAsm(dst *uint16, w *uint16, ldw uintptr, chunks int, stride uintptr, low int) (nonzero uint32)
// Packs 16 rows of fp16 weights (row i at w + i*ldw bytes), chunks x 32 columns, into B tiles
// (packF16TileGo's layout), chunk c's tile at dst + c*stride bytes: the high bfloat16 parts,
// or with low set the remainders. It reports whether any remainder is nonzero.
TEXT ·amxPackAsm(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), AX
	MOVQ w+8(FP), SI
	MOVQ ldw+16(FP), DX
	MOVQ chunks+24(FP), CX
	MOVQ stride+32(FP), R8
	MOVQ low+40(FP), R10
	XORL R9, R9
	TESTQ CX, CX
	JZ   packDone
	TESTQ R10, R10
	JNZ  packLow

packHigh:
	PACK_CHUNK(PACK_HIGH_ROW)
	ADDQ $64, SI
	ADDQ R8, AX
	DECQ CX
	JNZ  packHigh
	JMP  packDone

packLow:
	PACK_CHUNK(PACK_LOW_ROW)
	ADDQ $64, SI
	ADDQ R8, AX
	DECQ CX
	JNZ  packLow

packDone:
	MOVL R9, nonzero+48(FP)
	VZEROUPPER
	RET

// func amxPackQ8Asm(dst *uint16, w *int8, ldw uintptr, chunks int, stride uintptr)
// Packs 16 rows of int8 codes (row i at w + i*ldw bytes), chunks x 32 columns, into B tiles
// of their bfloat16 values (packQ8TileGo's layout), chunk c's tile at dst + c*stride bytes.
TEXT ·amxPackQ8Asm(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), AX
	MOVQ w+8(FP), SI
	MOVQ ldw+16(FP), DX
	MOVQ chunks+24(FP), CX
	MOVQ stride+32(FP), R8
	TESTQ CX, CX
	JZ   packQ8Done

packQ8Loop:
	PACK_CHUNK(PACK_Q8_ROW)
	ADDQ $32, SI
	ADDQ R8, AX
	DECQ CX
	JNZ  packQ8Loop

packQ8Done:
	VZEROUPPER
	RET

// func amxScaleRowsAsm(y *float32, ldy uintptr, s *float32, n int, blocks int)
// Multiplies blocks x 16 values of each of n rows of y (ldy bytes apart) by s, value by value.
TEXT ·amxScaleRowsAsm(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ ldy+8(FP), DX
	MOVQ s+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ blocks+32(FP), R8

scaleToken:
	MOVQ DI, AX
	MOVQ SI, BX
	MOVQ R8, R9

scaleBlock:
	VMOVUPS (BX), Z0
	VMULPS  (AX), Z0, Z0
	VMOVUPS Z0, (AX)
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ R9
	JNZ  scaleBlock
	ADDQ DX, DI
	DECQ CX
	JNZ  scaleToken
	VZEROUPPER
	RET

// CHUNKn runs the high-part products of one chunk for n weight row tiles; LOWn the remainder
// products (DX = the remainder tiles).
#define CHUNK3 \
	LOAD_B0; LOAD_B1; LOAD_B2; \
	LOAD_HI_A3; DP_C0_A3; DP_C1_A3; DP_C2_A3; \
	LOAD_MID_A7; DP_C0_A7; DP_C1_A7; DP_C2_A7; \
	LOAD_LO_A3; DP_C0_A3; DP_C1_A3; DP_C2_A3

#define LOW3 \
	LEAQ (R11)(R15*1), DX; \
	LOAD_L0; LOAD_L1; LOAD_L2; \
	LOAD_HI_A7; DP_C0_A7; DP_C1_A7; DP_C2_A7; \
	LOAD_MID_A3; DP_C0_A3; DP_C1_A3; DP_C2_A3

#define CHUNK2 \
	LOAD_B0; LOAD_B1; \
	LOAD_HI_A3; DP_C0_A3; DP_C1_A3; \
	LOAD_MID_A7; DP_C0_A7; DP_C1_A7; \
	LOAD_LO_A3; DP_C0_A3; DP_C1_A3

#define LOW2 \
	LEAQ (R11)(R15*1), DX; \
	LOAD_L0; LOAD_L1; \
	LOAD_HI_A7; DP_C0_A7; DP_C1_A7; \
	LOAD_MID_A3; DP_C0_A3; DP_C1_A3

#define CHUNK1 \
	LOAD_B0; \
	LOAD_HI_A3; DP_C0_A3; \
	LOAD_MID_A7; DP_C0_A7; \
	LOAD_LO_A3; DP_C0_A3

#define LOW1 \
	LEAQ (R11)(R15*1), DX; \
	LOAD_L0; \
	LOAD_HI_A7; DP_C0_A7; \
	LOAD_MID_A3; DP_C0_A3

// NEXT_TILE steps SI to the next token tile's C and R10 to its A tiles (DI = lda).
#define NEXT_TILE \
	MOVQ R9, AX; \
	SHLQ $4, AX; \
	ADDQ AX, SI; \
	ADDQ DI, R10

// func amxTilesAsm(cfg *byte, c *float32, ldc uintptr, a *uint16, lda uintptr, b *uint16, blo *uint16, chunks int, tiles int, rowTiles int, flags int, pf uintptr, pfStride uintptr)
// The AMX micro-kernel, for tiles token tiles in turn: C[16 tokens, 16*rowTiles weight rows]
// (+)= A · B over chunks x 32 columns, rowTiles 1 to 3. Token tile i's C is at c + i*16*ldc
// bytes (rows ldc bytes apart), its A tiles at a + i*lda: per chunk the three 1 KiB A tiles of
// the activations' parts (hi, mid, lo), 3 KiB per chunk. b holds per chunk the B tiles of the
// weights' high parts (rows 0-15, 16-31, 32-47), 3 KiB per chunk, blo their remainders. The
// products of a chunk run in amxTilesGo's order: the high parts times each activation part,
// then (flags bit 1) the remainders times hi and mid. C is loaded first when flags bit 0 is
// set, else zeroed. One LDTILECFG serves the whole call (it costs as much as a few tile
// products). Each chunk step also prefetches one row of weights (PREFETCH_ROW): row i of the
// call's steps at pf + i*pfStride bytes, which is only an address (a prefetch never faults).
TEXT ·amxTilesAsm(SB), NOSPLIT, $0-104

// (Defined inside the function so that vet checks its argument names against this one.)
// PREFETCH_ROW asks for the 512 bytes at pf (256 fp16 weights: one row of the next weight block
// to pack, amxKBlock chunks) to be brought into L2, and steps pf by pfStride. One row per chunk
// step spreads the next block's misses over the tile products, which leave the memory idle.
#define PREFETCH_ROW \
	MOVQ pf+88(FP), AX; \
	PREFETCHT1 (AX); PREFETCHT1 64(AX); PREFETCHT1 128(AX); PREFETCHT1 192(AX); \
	PREFETCHT1 256(AX); PREFETCHT1 320(AX); PREFETCHT1 384(AX); PREFETCHT1 448(AX); \
	ADDQ pfStride+96(FP), AX; \
	MOVQ AX, pf+88(FP)

	MOVQ cfg+0(FP), AX
	LDTILECFG_AX
	MOVQ c+8(FP), SI
	MOVQ ldc+16(FP), R9
	MOVQ a+24(FP), R10
	MOVQ lda+32(FP), DI
	MOVQ b+40(FP), R12
	MOVQ blo+48(FP), R15
	SUBQ R12, R15 // remainders at R11 + R15
	MOVQ tiles+64(FP), R14
	MOVQ flags+80(FP), BX
	MOVQ $64, R13 // tile row stride
	MOVQ rowTiles+72(FP), AX
	CMPQ AX, $2
	JEQ  tile2
	JLT  tile1

tile3:
	TESTQ $1, BX
	JZ   zero3
	LOAD_C0
	LOAD_C1
	LOAD_C2
	JMP  start3

zero3:
	TILEZERO_C0
	TILEZERO_C1
	TILEZERO_C2

start3:
	MOVQ R10, R8
	MOVQ R12, R11
	MOVQ chunks+56(FP), CX

loop3:
	PREFETCH_ROW
	CHUNK3
	TESTQ $2, BX
	JZ   next3
	LOW3

next3:
	ADDQ $3072, R8
	ADDQ $3072, R11
	DECQ CX
	JNZ  loop3
	STORE_C0
	STORE_C1
	STORE_C2
	NEXT_TILE
	DECQ R14
	JNZ  tile3
	TILERELEASE
	RET

tile2:
	TESTQ $1, BX
	JZ   zero2
	LOAD_C0
	LOAD_C1
	JMP  start2

zero2:
	TILEZERO_C0
	TILEZERO_C1

start2:
	MOVQ R10, R8
	MOVQ R12, R11
	MOVQ chunks+56(FP), CX

loop2:
	PREFETCH_ROW
	CHUNK2
	TESTQ $2, BX
	JZ   next2
	LOW2

next2:
	ADDQ $3072, R8
	ADDQ $3072, R11
	DECQ CX
	JNZ  loop2
	STORE_C0
	STORE_C1
	NEXT_TILE
	DECQ R14
	JNZ  tile2
	TILERELEASE
	RET

tile1:
	TESTQ $1, BX
	JZ   zero1
	LOAD_C0
	JMP  start1

zero1:
	TILEZERO_C0

start1:
	MOVQ R10, R8
	MOVQ R12, R11
	MOVQ chunks+56(FP), CX

loop1:
	PREFETCH_ROW
	CHUNK1
	TESTQ $2, BX
	JZ   next1
	LOW1

next1:
	ADDQ $3072, R8
	ADDQ $3072, R11
	DECQ CX
	JNZ  loop1
	STORE_C0
	NEXT_TILE
	DECQ R14
	JNZ  tile1
	TILERELEASE
	RET
