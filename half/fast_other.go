//go:build !(amd64 || arm64) || noasm

package half

// Without assembly the fast paths convert nothing and the pure-Go twins do
// all the work.

func bf16ToF16Fast(dst, src []uint16, st *Stats) int { return 0 }
func bf16ToF32Fast(dst []float32, src []uint16) int  { return 0 }
func f16ToF32Fast(dst []float32, src []uint16) int   { return 0 }
func f32ToF16Fast(dst []uint16, src []float32) int   { return 0 }

// HasAsm reports whether the bulk conversions use assembly on this machine.
func HasAsm() bool { return false }
