package mil

import (
	"math"
	"sync"
)

// The sim keeps every float tensor as float32 holding values that are exactly representable
// in the tensor's declared type; these helpers convert fp16 bits and round to fp16.

var (
	f16TableOnce sync.Once
	f16Table     []float32 // fp16 bits -> float32, all 65536 patterns
)

// f16ToF32 widens fp16 bits to float32, exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch exp {
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant * 2^-24, exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1F:
		if mant == 0 {
			return math.Float32frombits(sign | 0x7F800000)
		}
		return math.Float32frombits(sign | 0x7FC00000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// f32ToF16 narrows float32 to fp16 bits with round-to-nearest-even; overflow gives ±Inf,
// tiny values give subnormals or ±0, NaN stays NaN.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xFF
	mant := b & 0x7FFFFF
	if exp == 0xFF {
		if mant != 0 {
			return sign | 0x7E00 | uint16(mant>>13)
		}
		return sign | 0x7C00
	}
	e := exp - 127 + 15
	if e >= 0x1F {
		return sign | 0x7C00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1FFF
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: both correct
	}
	return sign | uint16(h)
}

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
func F16ToF32(dst []float32, src []uint16) {
	t := f16Lookup()
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = t[h]
	}
}

// F32ToF16 narrows float32 values to fp16 bits (round to nearest even). dst must be at least
// as long as src.
func F32ToF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = f32ToF16(f)
	}
}
