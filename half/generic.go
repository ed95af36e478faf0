package half

// Pure-Go twins of the assembly. They are what arm64 and -tags noasm run, and
// what the assembly is tested against; dst must be at least as long as src.

// bf16ToF16Generic converts src into dst and adds to st what was lost.
func bf16ToF16Generic(dst, src []uint16, st *Stats) {
	dst = dst[:len(src)]
	for i, b := range src {
		a := uint32(b & 0x7FFF)
		// Fast path: magnitudes in [2^-14, 65536) are fp16 normals and
		// convert exactly: rebias the exponent (127 -> 15) and widen the
		// 7-bit mantissa to 10 bits. With a = E<<7|m, a<<3 = E<<10|m<<3,
		// so subtracting 112<<10 does both at once.
		if a-0x3880 < 0x4780-0x3880 {
			dst[i] = b&0x8000 | uint16(a<<3-0x1C000)
			continue
		}
		h := f32BitsToF16(uint32(b) << 16)
		dst[i] = h
		classify(b, h, st)
	}
}

// classify adds to st what converting bfloat16 b to fp16 h lost.
func classify(b, h uint16, st *Stats) {
	a := b & 0x7FFF
	switch {
	case a > 0x7F80:
		st.NaN++
	case a == 0x7F80, a == 0:
		// ±Inf and ±0 convert exactly.
	case a >= 0x4780:
		st.Overflow++
		st.Inexact++
	default:
		ha := h & 0x7FFF
		if ha == 0 {
			st.Underflow++
		} else if ha < 0x400 {
			st.Subnormal++
		}
		if f16ToF32Bits(h) != uint32(b)<<16 {
			st.Inexact++
		}
	}
}

func bf16ToF32Generic(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, b := range src {
		dst[i] = BF16ToF32Scalar(b)
	}
}

func f16ToF32Generic(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = F16ToF32Scalar(h)
	}
}

func f32ToF16Generic(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = F32ToF16Scalar(f)
	}
}
