//go:build !noasm

package half

// On arm64 the bulk widenings and the fp16 narrowing run on NEON (half_arm64.s),
// which every arm64 CPU has; bfloat16 -> fp16, with its loss counts, stays in Go.

// HasAsm reports whether the bulk conversions use assembly on this machine.
func HasAsm() bool { return true }

// The fast paths convert the longest prefix the assembly handles (whole
// blocks of 8) and return its length; the caller converts the rest in Go.

func bf16ToF16Fast(dst, src []uint16, st *Stats) int { return 0 }

func bf16ToF32Fast(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if n > 0 {
		bf16ToF32NEON(dst[:n], src[:n])
	}
	return n
}

func f16ToF32Fast(dst []float32, src []uint16) int {
	n := len(src) &^ 7
	if n > 0 {
		f16ToF32NEON(dst[:n], src[:n])
	}
	return n
}

func f32ToF16Fast(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if n > 0 {
		f32ToF16NEON(dst[:n], src[:n])
	}
	return n
}

// bf16ToF32NEON widens len(src) values (a multiple of 8) into dst.
//
//go:noescape
func bf16ToF32NEON(dst []float32, src []uint16)

// f16ToF32NEON widens len(src) values (a multiple of 8) into dst.
//
//go:noescape
func f16ToF32NEON(dst []float32, src []uint16)

// f32ToF16NEON narrows len(src) values (a multiple of 8) into dst.
//
//go:noescape
func f32ToF16NEON(dst []uint16, src []float32)
