// Package half converts between IEEE 754 binary16 (fp16), bfloat16 (bf16) and
// binary32 (float32), one value at a time or in bulk.
//
// Values of the 16-bit formats travel as their raw bit patterns in uint16, so
// a slice of them can alias a memory-mapped tensor without copying.
//
// Rounding is round-to-nearest-even everywhere. Conversions that widen
// (fp16 -> f32, bf16 -> f32) are exact. Conversions that narrow follow the
// x86 F16C instruction VCVTPS2PH bit for bit, so the pure-Go code and the
// assembly agree on every input:
//   - magnitudes that round past the largest finite value become ±Inf;
//   - results below the smallest normal are rounded to subnormals (no flush to
//     zero), and to ±0 when they are smaller than half the smallest subnormal;
//   - a NaN stays a NaN: it is made quiet (the top mantissa bit is set) and
//     keeps the top bits of its payload.
//
// The bulk functions use AVX2+F16C assembly on amd64 when the CPU has it
// (checked at run time with golang.org/x/sys/cpu), NEON on arm64 (all but
// BF16ToF16, whose loss counts stay in Go) and a pure-Go twin elsewhere, or
// everywhere when built with the tag noasm.
package half
