//go:build !amd64 || noasm

package kernels

// Without the amd64 assembly MatMulQ4Float runs its Go twin, and the q4
// products of every size stay on the W4A8 kernels (NEON SDOT on arm64).

func q4FloatFast() bool { return false }

func q4FloatImpl() string { return "go" }

func matMulQ4FloatFast(y []float32, ldy int, x []float32, n int, w []byte, scale, offset []uint16, group, rows, cols int) bool {
	return false
}
