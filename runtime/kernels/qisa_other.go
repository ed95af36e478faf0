//go:build (!amd64 && !arm64) || noasm

package kernels

// Without assembly the quantized kernels' fast paths do nothing and the
// pure-Go twins do all the work.

// QuantKernels names the instruction set the quantized matrix kernels use on
// this machine: always "go" here.
func QuantKernels() string { return "go" }

// q16Planes: no kernel reads Int16Acts as int8 planes here.
const q16Planes = false

func matMulQ8Fast(y []float32, ldy int, a *Int16Acts, w []int8, scale []uint16, rows int) int {
	return 0
}

func matMulQ4Fast(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows int) int {
	return 0
}
