//go:build (!amd64 && !arm64) || noasm

package kernels

// Without assembly every fast path does nothing and returns 0, so the
// pure-Go twins do all the work.

// HasAsm reports whether the kernels use assembly on this machine.
func HasAsm() bool { return false }

func matVecF16Fast(y []float32, w []uint16, x []float32, rows, cols int) int  { return 0 }
func matVecF32Fast(y []float32, w []float32, x []float32, rows, cols int) int { return 0 }
func matMulF16Fast(y, x []float32, w []uint16, n, rows, cols, lo, hi int) int { return 0 }
func matMulF32Fast(y, x, w []float32, n, rows, cols, lo, hi int) int          { return 0 }

// No NN kernels in assembly here: the Go twin does all of gemmNN.
func gemmNNFast(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) int {
	return 0
}

// chosenImpls names the kernels Kernels reports.
func chosenImpls() (gemv, gemm, nn, vec string) { return "go", "go", "go", "go" }

// isaNames are ISALevels where every kernel is Go.
var isaNames = []string{"go"}

// ISA names the level the kernels use: always the Go twins here.
func ISA() string { return "go" }

// capISA has nothing to turn off.
func capISA(string) {}
