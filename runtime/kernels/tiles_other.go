//go:build !amd64 || noasm

package kernels

// Without the assembly the tile size only shapes how Pool splits GEMM rows.
const (
	tileTokens = 4
	tileRows   = 3
)
