// Package quant converts float weights to anepack's two quantized weight
// formats and back. The same bytes are read by the CPU kernels
// (runtime/kernels.MatVecQ8, MatVecQ4, ...) and, as MIL weight blobs, by the
// Apple Neural Engine, so the layouts below follow the MIL conventions.
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
// That search is computed with the candidates as vector lanes (AVX2 or AVX-512
// on amd64, Go elsewhere), each lane doing the scalar roundings in the scalar
// order, so the result is the one-candidate-at-a-time search's bit for bit
// (fitGroupQ4Slow spells that out; the tests hold every kernel set to a frozen
// copy of it). The q8 quantizer multiplies by the inverse scale and divides
// exactly only next to a tie, with the same result as dividing every weight.
package quant
