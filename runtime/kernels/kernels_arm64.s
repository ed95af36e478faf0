//go:build !noasm

// NEON kernels for arm64, written by hand (avo targets amd64 only). Go's
// arm64 assembler has no FCVTL/FCVTL2 (fp16 -> fp32 widening), FADD (vector)
// or FADDP, so those are emitted as WORDs by the macros below; each encoding
// was checked with aarch64 objdump. Conventions as in kernels_amd64.s: the
// kernels handle the first k columns (a multiple of 8) and Go adds the rest.

#include "textflag.h"

// FCVTL Vd.4S, Vn.4H / FCVTL2 Vd.4S, Vn.8H: widen the low / high 4 halves.
#define FCVTL(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))
#define FCVTL2(d, n) WORD $(0x4E217800 | ((n)<<5) | (d))
// FADD Vd.4S, Vn.4S, Vm.4S and FADDP (vector and scalar Sd, Vn.2S).
#define FADD4S(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP4S(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP2S(d, n) WORD $(0x7E30D800 | ((n)<<5) | (d))

// func matVecF16NEON(y []float32, w []uint16, x []float32, rows, cols, k int)
// y[r] = sum_{c<k} w[r*cols+c]*x[c], one row at a time (a single sequential
// weight stream), 16 columns per step into 4 independent accumulators.
TEXT ·matVecF16NEON(SB), NOSPLIT, $0-96
	MOVD y_base+0(FP), R0
	MOVD w_base+24(FP), R1
	MOVD x_base+48(FP), R2
	MOVD rows+72(FP), R3
	MOVD cols+80(FP), R4
	MOVD k+88(FP), R5
	LSL  $1, R4, R4 // row stride in bytes
	CBZ  R3, f16done

f16row:
	MOVD R1, R6
	MOVD R2, R7
	MOVD R5, R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	CMP  $16, R8
	BLT  f16tail

f16loop:
	VLD1.P 32(R6), [V4.H8, V5.H8]
	VLD1.P 64(R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	FCVTL(6, 4)
	FCVTL2(7, 4)
	FCVTL(20, 5)
	FCVTL2(21, 5)
	VFMLA  V6.S4, V16.S4, V0.S4
	VFMLA  V7.S4, V17.S4, V1.S4
	VFMLA  V20.S4, V18.S4, V2.S4
	VFMLA  V21.S4, V19.S4, V3.S4
	SUB    $16, R8
	CMP    $16, R8
	BGE    f16loop

f16tail:
	CBZ  R8, f16sum
	VLD1 (R6), [V4.H8]
	VLD1 (R7), [V16.S4, V17.S4]
	FCVTL(6, 4)
	FCVTL2(7, 4)
	VFMLA V6.S4, V16.S4, V0.S4
	VFMLA V7.S4, V17.S4, V1.S4

f16sum:
	FADD4S(0, 0, 1)
	FADD4S(2, 2, 3)
	FADD4S(0, 0, 2)
	FADDP4S(0, 0, 0)
	FADDP2S(0, 0)
	FMOVS F0, (R0)
	ADD   $4, R0
	ADD   R4, R1
	SUBS  $1, R3
	BNE   f16row

f16done:
	RET

// func matVecF32NEON(y []float32, w []float32, x []float32, rows, cols, k int)
// The float32-weight twin of matVecF16NEON.
TEXT ·matVecF32NEON(SB), NOSPLIT, $0-96
	MOVD y_base+0(FP), R0
	MOVD w_base+24(FP), R1
	MOVD x_base+48(FP), R2
	MOVD rows+72(FP), R3
	MOVD cols+80(FP), R4
	MOVD k+88(FP), R5
	LSL  $2, R4, R4 // row stride in bytes
	CBZ  R3, f32done

f32row:
	MOVD R1, R6
	MOVD R2, R7
	MOVD R5, R8
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	CMP  $16, R8
	BLT  f32tail

f32loop:
	VLD1.P 64(R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	VFMLA  V5.S4, V17.S4, V1.S4
	VFMLA  V6.S4, V18.S4, V2.S4
	VFMLA  V7.S4, V19.S4, V3.S4
	SUB    $16, R8
	CMP    $16, R8
	BGE    f32loop

f32tail:
	CBZ  R8, f32sum
	VLD1 (R6), [V4.S4, V5.S4]
	VLD1 (R7), [V16.S4, V17.S4]
	VFMLA V4.S4, V16.S4, V0.S4
	VFMLA V5.S4, V17.S4, V1.S4

f32sum:
	FADD4S(0, 0, 1)
	FADD4S(2, 2, 3)
	FADD4S(0, 0, 2)
	FADDP4S(0, 0, 0)
	FADDP2S(0, 0)
	FMOVS F0, (R0)
	ADD   $4, R0
	ADD   R4, R1
	SUBS  $1, R3
	BNE   f32row

f32done:
	RET

// func dotNEON(x, y []float32) float32
// sum x[i]*y[i] over len(x), a multiple of 8, in two accumulators.
TEXT ·dotNEON(SB), NOSPLIT, $0-52
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R2
	MOVD y_base+24(FP), R1
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	CBZ  R2, dotsum

dotloop:
	VLD1.P 32(R0), [V4.S4, V5.S4]
	VLD1.P 32(R1), [V6.S4, V7.S4]
	VFMLA  V4.S4, V6.S4, V0.S4
	VFMLA  V5.S4, V7.S4, V1.S4
	SUBS   $8, R2
	BNE    dotloop

dotsum:
	FADD4S(0, 0, 1)
	FADDP4S(0, 0, 0)
	FADDP2S(0, 0)
	FMOVS F0, ret+48(FP)
	RET

// func axpyNEON(y, x []float32, a float32)
// y[i] += a*x[i] for i < len(x), a multiple of 8.
TEXT ·axpyNEON(SB), NOSPLIT, $0-52
	MOVD  y_base+0(FP), R0
	MOVD  x_base+24(FP), R1
	MOVD  x_len+32(FP), R2
	FMOVS a+48(FP), F2
	VDUP  V2.S[0], V2.S4
	CBZ   R2, axpydone

axpyloop:
	VLD1   (R0), [V4.S4, V5.S4]
	VLD1.P 32(R1), [V6.S4, V7.S4]
	VFMLA  V6.S4, V2.S4, V4.S4
	VFMLA  V7.S4, V2.S4, V5.S4
	VST1.P [V4.S4, V5.S4], 32(R0)
	SUBS   $8, R2
	BNE    axpyloop

axpydone:
	RET
