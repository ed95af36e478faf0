// Package quant converts float weights to anepack's quantized weight formats
// and back. The planar formats q8 and q4 are read by the CPU kernels
// (runtime/kernels.MatVecQ8, MatVecQ4, ...) and, as MIL weight blobs, by the
// Apple Neural Engine, so their layouts follow the MIL conventions. The
// super-block formats q4k and q6k keep each block's scales beside its codes, as
// llama.cpp's K-quants do: finer scales for fewer bits, read by the CPU only (no
// MIL op reads them). mxfp4 is read from checkpoints as they store it, not produced
// here, and likewise only by the CPU.
//
// # q8: int8, per output channel, symmetric
//
// A [rows, cols] matrix becomes
//
//	data  int8 [rows, cols], row-major
//	scale fp16 [rows]                       w[r,c] ≈ scale[r] * data[r,c]
//
// scale[r] = max_c |w[r,c]| / 127 rounded to fp16, and data = the nearest
// integer (ties to even) of w/scale, clamped to [-127, 127]; -128 is never
// produced, so negating a value can not overflow. An all-zero row has scale 0
// and data 0. This is MIL's constexpr_affine_dequantize with axis 0 and a
// zero point of 0.
//
// # q4: unsigned 4-bit, affine, per group of G inputs
//
// G is 32, 64 or 128 and must divide cols. A [rows, cols] matrix becomes
//
//	data   uint4 [rows, cols], packed two per byte, LSB first
//	scale  fp16  [rows, cols/G]
//	offset fp16  [rows, cols/G]             w[r,c] ≈ scale[r,g] * (q[r,c] - offset[r,g]), g = c/G
//
// Byte k of a row holds element 2k in its low nibble and element 2k+1 in its
// high nibble (the MIL uint4 and MLX order). The offset is an fp16 number, not
// an integer: it is what MIL's constexpr_blockwise_shift_scale takes, and it
// lets a group whose values are all of one sign use all 16 levels. A scale may
// be negative (MLX checkpoints have some); everything here allows it.
//
// The value of a quantized weight is defined as float32(scale) times
// (float32(q) - float32(offset)), evaluated in float32; DequantizeQ4 computes
// exactly that.
//
// # q4k: 4-bit codes in super-blocks of 256 (4.5 bits per weight)
//
// A row of cols inputs (a multiple of 256) is cols/256 super-blocks of 144 bytes, the geometry
// and bytes of llama.cpp's Q4_K:
//
//	[0, 2)     d     fp16, little-endian: the step of the sub-block scales
//	[2, 4)     dmin  fp16: the step of the sub-block mins
//	[4, 16)    eight 6-bit scales sc[j] and eight 6-bit mins m[j], one per sub-block j of 32:
//	           j < 4:  sc[j] = b[j] & 63,  m[j] = b[j+4] & 63
//	           j >= 4: sc[j] = b[j+4] & 15 | (b[j-4] >> 6) << 4,  m[j] = b[j+4] >> 4 | (b[j] >> 6) << 4
//	           (b = these 12 bytes; Q4KScaleMin reads them)
//	[16, 144)  codes: for each chunk c = 0..3 of 64 weights, bytes [16+32c, 16+32c+32) hold
//	           weight 64c+i in the low nibble and weight 64c+32+i in the high nibble of byte i
//
// and weight i of the super-block, in sub-block j = i/32 with code q, is
//
//	w = (d·sc[j])·q − dmin·m[j]      in float32
//
// Every product there is exact in float32 (an fp16 times 6 bits times 4 bits), so every reader
// computes the same value whatever its instruction order (DequantizeRowQ4K).
//
// # q6k: 6-bit codes in super-blocks of 256 (6.5625 bits per weight)
//
// A row is cols/256 super-blocks of 210 bytes, llama.cpp's Q6_K:
//
//	[0, 128)    ql: low 4 bits of the codes
//	[128, 192)  qh: high 2 bits of the codes
//	[192, 208)  sixteen int8 scales sc[j], one per sub-block j of 16
//	[208, 210)  d fp16
//
// For the half h = 0, 1 (weights 128h..128h+127) and i = 0..31, ql[64h+i] holds the low bits
// of weight 128h+i (low nibble) and 128h+64+i (high nibble), ql[64h+32+i] those of 128h+32+i
// and 128h+96+i, and qh[32h+i] the high bits of 128h+i, +32, +64, +96 in its bit pairs 0-1,
// 2-3, 4-5, 6-7. Weight i with code q (0..63) is
//
//	w = (d·sc[i/16])·(q − 32)        in float32, again exact.
//
// Rows that are not a whole number of super-blocks cannot be stored in either type; the q4k
// recipe stores them as q4 or q8 (package blobplan).
//
// # mxfp4: the OCP microscaling FP4 format, as gpt-oss checkpoints store it
//
// A [rows, cols] matrix (cols a multiple of 32) is
//
//	codes  uint4 [rows, cols], two per byte, the even element in the low nibble
//	scales uint8 [rows, cols/32]            w[r,c] = FP4[q[r,c]] · 2^(e[r,c/32] − 127)
//
// the bytes of a checkpoint's `X_blocks` ([..., rows, cols/32, 16]) and `X_scales`
// ([..., rows, cols/32]) tensors as they are: nothing is expanded, which is what makes
// gpt-oss-20b's experts 4.25 bits a weight. A code is FP4 E2M1: bit 3 the sign, bits 0-2 the
// magnitude 0, 0.5, 1, 1.5, 2, 3, 4 or 6 (FP4). A scale is E8M0, a bare exponent; code 255
// is NaN in the OCP format, and CheckMXFP4 refuses it. The value of a weight is that product
// in float32, which is exact (a subnormal for the smallest scales, ±Inf past the largest
// float32), so every reader computes the same weights (DequantizeRowMXFP4).
//
// # Quantizers
//
// QuantizeQ8 and QuantizeQ4 take float32 rows. For tensors too large to widen
// whole, QuantizeQ8From and QuantizeQ4From read raw little-endian fp16, bf16
// or f32 bytes (for example a memory-mapped safetensors tensor) one row at a
// time with a single row of float32 scratch; the Row functions quantize one
// row into caller buffers. FromMLX4 converts an MLX 4-bit checkpoint tensor
// without requantizing it. Malformed input (wrong lengths, a group size that
// does not divide cols, NaN or infinite weights) is reported as an error.
//
// The q4 quantizer picks, per group, the scale and offset with the smallest
// squared reconstruction error (measured with the fp16-rounded parameters
// that are actually stored) among: the plain min/max fit, the min/max fit of
// the range widened to include 0, and a sweep of candidate scales each refined
// by a least-squares fit of scale and offset to the levels it induces (the
// method of llama.cpp's make_qkx2_quants). docs/quantization.md has the
// measured errors of each choice.
//
// The super-block quantizers (QuantizeRowQ4K, QuantizeRowQ6K and their From forms) and the
// importance-aware q4 one (QuantizeRowQ4Weighted) take an optional importance per input
// column: the mean square of the activations that multiply it, measured on calibration text.
// They minimise Σ_i w_i (ŵ_i − x_i)² with w_i = importance × sqrt(σ² + x_i²) (σ² twice the mean
// square of the block; without importances the first factor is 1), which approximates the
// error of the layer's output rather than of its weights. q4k: each sub-block's scale and min
// by a weighted sweep with least-squares refinement, then the eight scales and the eight mins as
// 6-bit levels of fp16 steps, then the codes, then weighted least-squares refits of the two
// steps and one-step nudges of each sub-block's scale and min, each kept only when it lowers
// the error as stored. q6k: the same with symmetric sub-block fits and int8 scales. All sums
// are exact or explicitly rounded, so the bytes do not depend on the machine.
//
// That search is computed with the candidates as vector lanes (AVX2 or AVX-512
// on amd64, Go elsewhere), each lane doing the scalar roundings in the scalar
// order, so the result is the one-candidate-at-a-time search's bit for bit
// (fitGroupQ4Slow spells that out; the tests hold every kernel set to a frozen
// copy of it). The q8 quantizer multiplies by the inverse scale and divides
// exactly only next to a tie, with the same result as dividing every weight.
package quant
