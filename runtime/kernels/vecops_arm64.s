//go:build !noasm

// NEON vector helpers for arm64, by hand as kernels_arm64.s is: Softmax's exponentials and
// maximum, its final scaling, and the sigmoid-gated activations (SwiGLU, GELU, GeGLU). Their
// exp is the AVX2 kernels' (internal/gen, exp8) step for step: the same Cephes polynomial, the
// same fused multiply-adds in the same order, the same clamps, so the two give the same bits
// (NaN aside: FMIN keeps a NaN where x86's MINPS drops it, as the Go twin does). Four lanes a
// step; the caller hands over a multiple of 4 values and finishes the rest in Go.
//
// Go's arm64 assembler lacks most vector floating-point instructions; they are WORDs here,
// each encoding checked with aarch64-linux-gnu-objdump.

#include "textflag.h"

#define FADD4S(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FSUB4S(d, n, m) WORD $(0x4EA0D400 | ((m)<<16) | ((n)<<5) | (d))
#define FMUL4S(d, n, m) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
#define FDIV4S(d, n, m) WORD $(0x6E20FC00 | ((m)<<16) | ((n)<<5) | (d))
#define FMAX4S(d, n, m) WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))
#define FMIN4S(d, n, m) WORD $(0x4EA0F400 | ((m)<<16) | ((n)<<5) | (d))
#define FCMGT4S(d, n, m) WORD $(0x6EA0E400 | ((m)<<16) | ((n)<<5) | (d))
#define FRINTN4S(d, n) WORD $(0x4E218800 | ((n)<<5) | (d))
#define FCVTZS4S(d, n) WORD $(0x4EA1B800 | ((n)<<5) | (d))
#define FNEG4S(d, n) WORD $(0x6EA0F800 | ((n)<<5) | (d))
#define BIC16B(d, n, m) WORD $(0x4E601C00 | ((m)<<16) | ((n)<<5) | (d))
#define BIT16B(d, n, m) WORD $(0x6EA01C00 | ((m)<<16) | ((n)<<5) | (d))
#define FMAXV4S(d, n) WORD $(0x6E30F800 | ((n)<<5) | (d))
#define FADDP4S(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP2S(d, n) WORD $(0x7E30D800 | ((n)<<5) | (d))

// The constants, each in four lanes: exp's in V16-V30 (LOADEXP), GELU's in V8-V10 (LOADGELU).
#define C4(i, v) DATA vecconst<>+(16*(i))(SB)/4, $v; DATA vecconst<>+(16*(i)+4)(SB)/4, $v; DATA vecconst<>+(16*(i)+8)(SB)/4, $v; DATA vecconst<>+(16*(i)+12)(SB)/4, $v
C4(0, 0x42b00000)  // V16 expHi 88
C4(1, 0xc2aeac4f)  // V17 expLo -87.33654
C4(2, 0x3fb8aa3b)  // V18 log2(e)
C4(3, 0x3f318000)  // V19 ln2, high part
C4(4, 0xb95e8083)  // V20 ln2, low part
C4(5, 0x39506967)  // V21 P0
C4(6, 0x3ab743ce)  // V22 P1
C4(7, 0x3c088908)  // V23 P2
C4(8, 0x3d2aa9c1)  // V24 P3
C4(9, 0x3e2aaaaa)  // V25 P4
C4(10, 0x3f000000) // V26 P5
C4(11, 0x3f800000) // V27 1
C4(12, 0x0000007f) // V28 the exponent bias, an integer
C4(13, 0x7f800000) // V29 +Inf
C4(14, 0x42b17218) // V30 log(MaxFloat32)
C4(15, 0x3f4c422a) // V8 sqrt(2/pi)
C4(16, 0x3d372713) // V9 0.044715
C4(17, 0xc0000000) // V10 -2
GLOBL vecconst<>(SB), RODATA|NOPTR, $288

#define LOADEXP \
	MOVD   $vecconst<>(SB), R9; \
	VLD1.P 64(R9), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD1.P 64(R9), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VLD1.P 64(R9), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	VLD1.P 48(R9), [V28.S4, V29.S4, V30.S4]

#define LOADGELU \
	VLD1 (R9), [V8.S4, V9.S4, V10.S4]

// EXP4 sets V4 = exp(V0) lane by lane (exp8 in internal/gen): V0 (clobbered) is clamped to
// [expLo, expHi], n = round-to-even(x·log2e), r = x - n·ln2 in two fused steps, the degree-5
// polynomial by fused multiply-adds, times 2^n; 0 below expLo, +Inf above log(MaxFloat32).
// Temporaries V1-V3, V5, V6.
#define EXP4 \
	FCMGT4S(1, 17, 0); \
	FCMGT4S(2, 0, 30); \
	FMIN4S(0, 0, 16); \
	FMAX4S(0, 0, 17); \
	FMUL4S(3, 0, 18); \
	FRINTN4S(3, 3); \
	VFMLS  V19.S4, V3.S4, V0.S4; \
	VFMLS  V20.S4, V3.S4, V0.S4; \
	VMOV   V22.B16, V5.B16; \
	VFMLA  V21.S4, V0.S4, V5.S4; \
	VMOV   V23.B16, V4.B16; \
	VFMLA  V5.S4, V0.S4, V4.S4; \
	VMOV   V24.B16, V5.B16; \
	VFMLA  V4.S4, V0.S4, V5.S4; \
	VMOV   V25.B16, V4.B16; \
	VFMLA  V5.S4, V0.S4, V4.S4; \
	VMOV   V26.B16, V5.B16; \
	VFMLA  V4.S4, V0.S4, V5.S4; \
	FMUL4S(6, 0, 0); \
	VMOV   V0.B16, V4.B16; \
	VFMLA  V5.S4, V6.S4, V4.S4; \
	FADD4S(4, 4, 27); \
	FCVTZS4S(6, 3); \
	VADD   V28.S4, V6.S4, V6.S4; \
	VSHL   $23, V6.S4, V6.S4; \
	FMUL4S(4, 4, 6); \
	BIC16B(4, 4, 1); \
	BIT16B(4, 29, 2)

// SIGMOIDDIV sets V7 = V7 / (1 + exp(V0)), the sigmoid-gated activations' common step
// (sigmoidScaled in internal/gen): x/(1+exp(-x)) for SiLU, x/(1+exp(-2·inner)) for GELU.
#define SIGMOIDDIV \
	EXP4; \
	FADD4S(4, 4, 27); \
	FDIV4S(7, 7, 4)

// func expSumNEON(dst, x []float32, m float32) float32
// dst[i] = exp(x[i]-m) for i < len(x), a multiple of 4; returns their sum.
TEXT ·expSumNEON(SB), NOSPLIT, $0-60
	MOVD  dst_base+0(FP), R0
	MOVD  x_base+24(FP), R1
	MOVD  x_len+32(FP), R2
	FMOVS m+48(FP), F7
	VDUP  V7.S[0], V7.S4
	LOADEXP
	VEOR  V11.B16, V11.B16, V11.B16
	CBZ   R2, expsumdone

expsumloop:
	VLD1.P 16(R1), [V0.S4]
	FSUB4S(0, 0, 7)
	EXP4
	VST1.P [V4.S4], 16(R0)
	FADD4S(11, 11, 4)
	SUBS   $4, R2
	BNE    expsumloop

expsumdone:
	FADDP4S(11, 11, 11)
	FADDP2S(11, 11)
	FMOVS F11, ret+56(FP)
	RET

// func swigluNEON(dst, gate, up []float32)
// dst[i] = gate[i]/(1+exp(-gate[i])) * up[i] for i < len(dst), a multiple of 4.
TEXT ·swigluNEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD gate_base+24(FP), R1
	MOVD up_base+48(FP), R3
	LOADEXP
	CBZ  R2, swiglodone

swigluloop:
	VLD1.P 16(R1), [V7.S4]
	VLD1.P 16(R3), [V11.S4]
	FNEG4S(0, 7)
	SIGMOIDDIV
	FMUL4S(7, 7, 11)
	VST1.P [V7.S4], 16(R0)
	SUBS   $4, R2
	BNE    swigluloop

swiglodone:
	RET

// GELUARG sets V0 = -2·sqrt(2/pi)·(x + 0.044715·x³) of V7 = x, operation by operation (no
// fused steps), as geluTanh in vec.go and the AVX2 kernel compute it.
#define GELUARG \
	FMUL4S(0, 7, 7); \
	FMUL4S(0, 7, 0); \
	FMUL4S(0, 9, 0); \
	FADD4S(0, 7, 0); \
	FMUL4S(0, 8, 0); \
	FMUL4S(0, 10, 0)

// func geluTanhNEON(dst, x []float32)
// dst[i] = gelu_tanh(x[i]) = x[i]/(1+exp(-2·inner)) for i < len(x), a multiple of 4.
TEXT ·geluTanhNEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD x_base+24(FP), R1
	MOVD x_len+32(FP), R2
	LOADEXP
	LOADGELU
	CBZ  R2, gelutdone

gelutloop:
	VLD1.P 16(R1), [V7.S4]
	GELUARG
	SIGMOIDDIV
	VST1.P [V7.S4], 16(R0)
	SUBS   $4, R2
	BNE    gelutloop

gelutdone:
	RET

// func geGLUNEON(dst, x, up []float32)
// dst[i] = gelu_tanh(x[i]) * up[i] for i < len(dst), a multiple of 4.
TEXT ·geGLUNEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD x_base+24(FP), R1
	MOVD up_base+48(FP), R3
	LOADEXP
	LOADGELU
	CBZ  R2, geglsdone

geglsloop:
	VLD1.P 16(R1), [V7.S4]
	VLD1.P 16(R3), [V11.S4]
	GELUARG
	SIGMOIDDIV
	FMUL4S(7, 7, 11)
	VST1.P [V7.S4], 16(R0)
	SUBS   $4, R2
	BNE    geglsloop

geglsdone:
	RET

// func maxNEON(x []float32) float32
// The largest of x[:len(x)], a positive multiple of 4 (a NaN may win, as in maxAVX2).
TEXT ·maxNEON(SB), NOSPLIT, $0-28
	MOVD   x_base+0(FP), R0
	MOVD   x_len+8(FP), R2
	VLD1.P 16(R0), [V0.S4]
	SUBS   $4, R2
	BEQ    maxdone

maxloop:
	VLD1.P 16(R0), [V1.S4]
	FMAX4S(0, 0, 1)
	SUBS   $4, R2
	BNE    maxloop

maxdone:
	FMAXV4S(0, 0)
	FMOVS F0, ret+24(FP)
	RET

// func scaleNEON(x []float32, a float32)
// x[i] *= a for i < len(x), a multiple of 4.
TEXT ·scaleNEON(SB), NOSPLIT, $0-28
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R2
	FMOVS a+24(FP), F1
	VDUP  V1.S[0], V1.S4
	CBZ   R2, scaledone

scaleloop:
	VLD1   (R0), [V0.S4]
	FMUL4S(0, 0, 1)
	VST1.P [V0.S4], 16(R0)
	SUBS   $4, R2
	BNE    scaleloop

scaledone:
	RET
