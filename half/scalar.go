package half

import "math"

// F16ToF32Scalar widens one fp16 value (its bits) to float32. The result is
// exact; a signaling NaN comes back quiet, as VCVTPH2PS does it.
func F16ToF32Scalar(h uint16) float32 {
	return math.Float32frombits(f16ToF32Bits(h))
}

// f16ToF32Bits is F16ToF32Scalar returning the float32 bits.
func f16ToF32Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch exp {
	case 0:
		if mant == 0 {
			return sign
		}
		// Subnormal fp16 is a normal float32: shift the leading one up to
		// the implicit position, lowering the exponent once per shift.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return sign | e<<23 | (mant&0x3FF)<<13
	case 0x1F:
		if mant == 0 {
			return sign | 0x7F800000
		}
		return sign | 0x7FC00000 | mant<<13
	default:
		return sign | (exp+127-15)<<23 | mant<<13
	}
}

// F32ToF16Scalar narrows one float32 to fp16 bits with round-to-nearest-even.
// Overflow gives ±Inf, tiny values give subnormals or ±0, and NaN gives a
// quiet NaN keeping the top 9 payload bits (the VCVTPS2PH result).
func F32ToF16Scalar(f float32) uint16 {
	return f32BitsToF16(math.Float32bits(f))
}

// f32BitsToF16 is F32ToF16Scalar on the float32 bits.
func f32BitsToF16(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xFF
	mant := b & 0x7FFFFF
	if exp == 0xFF {
		if mant != 0 {
			return sign | 0x7E00 | uint16(mant>>13)
		}
		return sign | 0x7C00
	}
	e := exp - 127 + 15 // fp16 biased exponent
	if e >= 0x1F {
		return sign | 0x7C00
	}
	if e <= 0 {
		// Below 2^-25 everything rounds to zero (2^-25 itself is a tie to
		// the even value 0).
		if e < -10 {
			return sign
		}
		// The value is m * 2^(e-38); in units of the smallest subnormal
		// (2^-24) that is m >> (14-e), rounded to nearest even.
		m := mant | 0x800000
		shift := uint32(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || (rem == halfway && h&1 == 1) {
			h++ // may carry into the smallest normal, which is correct
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1FFF
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf, which is correct
	}
	return sign | uint16(h)
}

// BF16ToF32Scalar widens one bfloat16 value (its bits) to float32, exactly:
// bfloat16 is the top half of a float32. NaN payloads are kept as they are.
func BF16ToF32Scalar(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// F32ToBF16Scalar narrows one float32 to bfloat16 bits with
// round-to-nearest-even; overflow gives ±Inf and NaN a quiet NaN with the top
// payload bits kept.
func F32ToBF16Scalar(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7FFFFFFF > 0x7F800000 {
		return uint16(b>>16) | 0x40
	}
	// Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even;
	// a carry out of the mantissa correctly bumps the exponent (up to Inf).
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

// BF16ToF16Scalar converts one bfloat16 value to fp16 with
// round-to-nearest-even, the same as BF16ToF16 on a one-element slice.
func BF16ToF16Scalar(b uint16) uint16 {
	return f32BitsToF16(uint32(b) << 16)
}

// F16ToBF16Scalar converts one fp16 value to bfloat16 with
// round-to-nearest-even (fp16 has 3 more mantissa bits than bfloat16).
func F16ToBF16Scalar(h uint16) uint16 {
	return F32ToBF16Scalar(F16ToF32Scalar(h))
}
