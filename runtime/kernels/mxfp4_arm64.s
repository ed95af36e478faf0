//go:build !noasm

// The NEON mxfp4 kernels (runtime/kernels/mxfp4.go has the contract and the Go twins), by hand
// like kernels_arm64.s. Per 32-column block: the scale 2^(e-127) is read from e8m0Scales and
// multiplies the 16 code values (fp4Values, kept in V28-V31) into a 64-byte table (V20-V23);
// the 16 code bytes become 32 codes in order (AND 15 and USHR 4, then ZIP1/ZIP2: the low
// nibble of byte k before its high nibble) times 4, the byte offset of a table entry; per 4
// weights a TBL copies each code to the 4 bytes of its lane, ORR adds the bytes' offsets 0-3
// (mxfp4NEONIndex) and a TBL over the 4 table registers gathers the 4 float32 weights. They
// are exactly quant.DequantizeRowMXFP4's (a power of two times a value of two significant
// bits); the GEMV FMLAs them with the activations into 4 accumulators.

#include "textflag.h"

// FMUL Vd.4S, Vn.4S, Vm.S[0] (by element), which Go's assembler lacks.
#define FMULE(d, n, m) WORD $(0x4F809000 | ((m)<<16) | ((n)<<5) | (d))
// FADD Vd.4S, Vn.4S, Vm.4S and FADDP (vector and scalar Sd, Vn.2S), as in kernels_arm64.s.
#define FADD4S(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP4S(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP2S(d, n) WORD $(0x7E30D800 | ((n)<<5) | (d))

// MXSETUP loads the constant registers: V28-V31 the code values, V16-V19 the copy patterns,
// V25 the byte offsets, V26 the nibble mask; R9 the address of the scales.
#define MXSETUP \
	MOVD  $·fp4Values(SB), R9; \
	VLD1  (R9), [V28.S4, V29.S4, V30.S4, V31.S4]; \
	MOVD  $·mxfp4NEONIndex(SB), R9; \
	VLD1.P 64(R9), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	VLD1  (R9), [V25.B16]; \
	VMOVI $15, V26.B16; \
	MOVD  $·e8m0Scales(SB), R9

// MXBLOCK reads the block's scale byte from (R2) and 16 code bytes from (R1), both
// post-incremented, and leaves the scaled table in V20-V23 and the codes times 4 in V7
// (columns 0-15) and V8 (16-31).
#define MXBLOCK \
	MOVBU.P 1(R2), R10; \
	ADD     R10<<2, R9, R11; \
	FMOVS   (R11), F12; \
	FMULE(20, 28, 12); \
	FMULE(21, 29, 12); \
	FMULE(22, 30, 12); \
	FMULE(23, 31, 12); \
	VLD1.P  16(R1), [V4.B16]; \
	VAND    V26.B16, V4.B16, V5.B16; \
	VUSHR   $4, V4.B16, V6.B16; \
	VZIP1   V6.B16, V5.B16, V7.B16; \
	VZIP2   V6.B16, V5.B16, V8.B16; \
	VSHL    $2, V7.B16, V7.B16; \
	VSHL    $2, V8.B16, V8.B16

// MXW(dst, codes, pattern) gathers into dst the 4 weights whose codes the pattern selects.
#define MXW(dst, codes, pattern) \
	VTBL pattern.B16, [codes.B16], dst.B16; \
	VORR V25.B16, dst.B16, dst.B16; \
	VTBL dst.B16, [V20.B16, V21.B16, V22.B16, V23.B16], dst.B16

// func mxfp4MatVecNEON(y []float32, w, e []byte, x []float32, rows, blocks int)
// y[r] = sum_c W[r,c]*x[c] for r < rows; rows and blocks are positive.
TEXT ·mxfp4MatVecNEON(SB), NOSPLIT, $0-112
	MOVD y_base+0(FP), R0
	MOVD w_base+24(FP), R1
	MOVD e_base+48(FP), R2
	MOVD x_base+72(FP), R3
	MOVD rows+96(FP), R4
	MOVD blocks+104(FP), R5
	MXSETUP

mvrow:
	MOVD R3, R7
	MOVD R5, R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

mvblock:
	MXBLOCK
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4] // V12 held the scale, used by now
	MXW(V9, V7, V16)
	VFMLA  V9.S4, V10.S4, V0.S4
	MXW(V9, V7, V17)
	VFMLA  V9.S4, V11.S4, V1.S4
	MXW(V9, V7, V18)
	VFMLA  V9.S4, V12.S4, V2.S4
	MXW(V9, V7, V19)
	VFMLA  V9.S4, V13.S4, V3.S4
	VLD1.P 64(R7), [V10.S4, V11.S4, V12.S4, V13.S4]
	MXW(V9, V8, V16)
	VFMLA  V9.S4, V10.S4, V0.S4
	MXW(V9, V8, V17)
	VFMLA  V9.S4, V11.S4, V1.S4
	MXW(V9, V8, V18)
	VFMLA  V9.S4, V12.S4, V2.S4
	MXW(V9, V8, V19)
	VFMLA  V9.S4, V13.S4, V3.S4
	SUBS   $1, R8
	BNE    mvblock

	FADD4S(0, 0, 1)
	FADD4S(2, 2, 3)
	FADD4S(0, 0, 2)
	FADDP4S(0, 0, 0)
	FADDP2S(0, 0)
	FMOVS F0, (R0)
	ADD   $4, R0
	SUBS  $1, R4
	BNE   mvrow
	RET

// func mxfp4DequantNEON(dst []float32, w, e []byte, blocks int)
// dst[32b+i] = the weight of block b, column i, for b < blocks (positive).
TEXT ·mxfp4DequantNEON(SB), NOSPLIT, $0-80
	MOVD dst_base+0(FP), R0
	MOVD w_base+24(FP), R1
	MOVD e_base+48(FP), R2
	MOVD blocks+72(FP), R5
	MXSETUP

dqblock:
	MXBLOCK
	MXW(V0, V7, V16)
	MXW(V1, V7, V17)
	MXW(V2, V7, V18)
	MXW(V3, V7, V19)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	MXW(V0, V8, V16)
	MXW(V1, V8, V17)
	MXW(V2, V8, V18)
	MXW(V3, V8, V19)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS   $1, R5
	BNE    dqblock
	RET
