package mil

import (
	"math"
	"sync"

	"github.com/anepack/anepack/half"
)

// The sim keeps every float tensor as float32 holding values that are exactly representable
// in the tensor's declared type; these helpers convert fp16 bits and round to fp16.

var (
	f16TableOnce sync.Once
	f16Table     []float32 // fp16 bits -> float32, all 65536 patterns
)

// f16ToF32 widens fp16 bits to float32, exactly (package half's conversion).
func f16ToF32(h uint16) float32 { return half.F16ToF32Scalar(h) }

// f32ToF16 narrows float32 to fp16 bits with round-to-nearest-even; overflow gives ±Inf,
// tiny values give subnormals or ±0, NaN stays NaN.
func f32ToF16(f float32) uint16 { return half.F32ToF16Scalar(f) }

// round16 rounds a float32 to the nearest fp16 value (ties to even) and returns it as float32.
func round16(f float32) float32 {
	b := math.Float32bits(f)
	a := b & 0x7FFFFFFF
	// Normal fp16 range [2^-14, 65520): round the 23-bit mantissa to 10 bits in place.
	if a-0x38800000 < 0x477FF000-0x38800000 {
		b += 0x0FFF + (b>>13)&1
		return math.Float32frombits(b &^ 0x1FFF)
	}
	return f16ToF32(f32ToF16(f))
}

// roundSlice16 rounds every element of x to fp16 in place.
func roundSlice16(x []float32) {
	for i, f := range x {
		x[i] = round16(f)
	}
}

func f16Lookup() []float32 {
	f16TableOnce.Do(func() {
		f16Table = make([]float32, 1<<16)
		for i := range f16Table {
			f16Table[i] = f16ToF32(uint16(i))
		}
	})
	return f16Table
}

// decodeF16 widens little-endian fp16 bytes into dst (len(dst) values).
func decodeF16(dst []float32, b []byte) {
	t := f16Lookup()
	b = b[:2*len(dst)]
	for i := range dst {
		dst[i] = t[uint16(b[2*i])|uint16(b[2*i+1])<<8]
	}
}

// F16ToF32 widens fp16 values (their bits) into dst, exactly. dst must be at least as long as src.
func F16ToF32(dst []float32, src []uint16) { half.F16ToF32(dst[:len(src)], src) }

// F32ToF16 narrows float32 values to fp16 bits (round to nearest even). dst must be at least
// as long as src.
func F32ToF16(dst []uint16, src []float32) { half.F32ToF16(dst[:len(src)], src) }
