//go:build !amd64 || noasm

package kernels

// Without the amd64 assembly MatMulQ8Float runs its Go twin, and the q8
// products of every size stay on the W8A16 kernels (NEON SDOT on arm64).

func q8FloatFast() bool { return false }

func q8FloatImpl() string { return "go" }

func matMulQ8FloatFast(y []float32, ldy int, x []float32, n int, w []int8, scale []uint16, rows, cols int) int {
	return 0
}
