//go:build !noasm

// NEON + dot-product (FEAT_DotProd) kernel of the q8 weights, written by hand
// (avo targets amd64 only). Go's arm64 assembler knows neither SDOT nor
// SCVTF (vector), so they are emitted as WORDs by the macros below, with
// the encodings of the Arm ARM (SDOT vector 4S/16B: 0x4E809400, SCVTF vector
// 4S: 0x4E21D800, FADDP as in kernels_arm64.s).

#include "textflag.h"

// SDOT Vd.4S, Vn.16B, Vm.16B: each 32-bit lane += the dot product of its 4
// signed bytes of Vn and Vm.
#define SDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// SCVTF Vd.4S, Vn.4S: int32 lanes to float32.
#define SCVTF4S(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))
#define FADDP4S(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP2S(d, n) WORD $(0x7E30D800 | ((n)<<5) | (d))

// func q8RowsSDOT(y []float32, w []int8, x []int8, d []float32, rows, cols, k int)
// y[r] = sum_{b<k/32} d[b] * dot(w[r*cols+32b:][:32], x[32b:][:32]) for
// r < rows: per block two SDOTs give 4 exact int32 partial sums, converted
// and multiplied by the block's activation scale into a float accumulator.
// The row's weight scale is applied by the Go caller. k is a positive
// multiple of 32.
TEXT ·q8RowsSDOT(SB), NOSPLIT, $0-120
	MOVD y_base+0(FP), R0
	MOVD w_base+24(FP), R1
	MOVD x_base+48(FP), R2
	MOVD d_base+72(FP), R3
	MOVD rows+96(FP), R4
	MOVD cols+104(FP), R5
	MOVD k+112(FP), R6
	LSR  $5, R6, R6 // blocks per row
	CBZ  R4, q8done

q8row:
	MOVD R1, R7
	MOVD R2, R8
	MOVD R3, R9
	MOVD R6, R10
	VEOR V0.B16, V0.B16, V0.B16

q8block:
	VLD1.P 32(R7), [V4.B16, V5.B16]
	VLD1.P 32(R8), [V6.B16, V7.B16]
	VLD1R.P 4(R9), [V16.S4]
	VEOR   V2.B16, V2.B16, V2.B16
	SDOT(2, 4, 6)
	SDOT(2, 5, 7)
	SCVTF4S(2, 2)
	VFMLA  V16.S4, V2.S4, V0.S4
	SUBS   $1, R10
	BNE    q8block

	FADDP4S(0, 0, 0)
	FADDP2S(0, 0)
	FMOVS F0, (R0)
	ADD   $4, R0
	ADD   R5, R1
	SUBS  $1, R4
	BNE   q8row

q8done:
	RET
