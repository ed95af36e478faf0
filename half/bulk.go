package half

// The bulk conversions below convert len(src) values. They panic when dst is
// shorter than src, like an out-of-range index would: a short buffer is a
// bug in the caller, not bad input. The assembly handles whole blocks and the
// pure-Go twin (generic.go) finishes the tail, so both always run in tests.

// BF16ToF16 converts bfloat16 values to fp16 with round-to-nearest-even,
// writing dst[i] for every src[i], and returns what was lost on the way.
// dst and src may be the same slice (in-place conversion) but must not
// otherwise overlap.
func BF16ToF16(dst, src []uint16) Stats {
	checkLen(len(dst), len(src), "BF16ToF16")
	var st Stats
	n := bf16ToF16Fast(dst, src, &st)
	bf16ToF16Generic(dst[n:len(src)], src[n:], &st)
	return st
}

// BF16ToF32 widens bfloat16 values to float32, exactly.
func BF16ToF32(dst []float32, src []uint16) {
	checkLen(len(dst), len(src), "BF16ToF32")
	n := bf16ToF32Fast(dst, src)
	bf16ToF32Generic(dst[n:len(src)], src[n:])
}

// F16ToF32 widens fp16 values to float32, exactly (signaling NaNs become
// quiet).
func F16ToF32(dst []float32, src []uint16) {
	checkLen(len(dst), len(src), "F16ToF32")
	n := f16ToF32Fast(dst, src)
	f16ToF32Generic(dst[n:len(src)], src[n:])
}

// F32ToF16 narrows float32 values to fp16 with round-to-nearest-even.
func F32ToF16(dst []uint16, src []float32) {
	checkLen(len(dst), len(src), "F32ToF16")
	n := f32ToF16Fast(dst, src)
	f32ToF16Generic(dst[n:len(src)], src[n:])
}

// F32ToBF16 narrows float32 values to bfloat16 with round-to-nearest-even.
// It is pure Go on every platform: nothing on the hot paths needs it.
func F32ToBF16(dst []uint16, src []float32) {
	checkLen(len(dst), len(src), "F32ToBF16")
	for i, f := range src {
		dst[i] = F32ToBF16Scalar(f)
	}
}

func checkLen(dst, src int, fn string) {
	if dst < src {
		panic("half." + fn + ": dst is shorter than src")
	}
}
