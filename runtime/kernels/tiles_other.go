//go:build (!amd64 && !arm64) || noasm

package kernels

// Without the assembly the tile size only shapes how Pool splits GEMM rows.
const (
	tileTokens = 4
	tileRows   = 3
)

// gemmRowMultiple is the row multiple Pool splits GEMM rows in.
func gemmRowMultiple() int { return tileRows }
