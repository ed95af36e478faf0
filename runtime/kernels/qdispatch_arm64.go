//go:build !noasm

package kernels

// No NEON code for the quantized kernels yet: their kernels' fast paths do nothing and the
// pure-Go twins do all the work.

func matMulQ8Fast(y []float32, ldy int, a *Int8Acts, w []int8, scale []uint16, rows int) int {
	return 0
}

func matMulQ4Fast(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows int) int {
	return 0
}
