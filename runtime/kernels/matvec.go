package kernels

import "fmt"

// MatVecF16 computes one matrix-vector product with fp16 weights, the decode
// hot path:
//
//	y[r] = sum_c w[r*cols+c] * x[c]   for r < rows
//
// w is [rows, cols] row-major fp16 bits (read in place), x is [cols], y is
// [rows]. It runs on the calling goroutine; Pool.MatVecF16 splits the rows
// over cores.
func MatVecF16(y []float32, w []uint16, x []float32, rows, cols int) {
	checkMat("MatVecF16", len(y), len(w), len(x), 1, rows, cols)
	k := matVecF16Fast(y, w, x, rows, cols)
	if k < cols || k == 0 {
		matVecF16Generic(y, w, x, rows, cols, k)
	}
}

// MatVecF32 is MatVecF16 for float32 weights: y[r] = sum_c w[r*cols+c]*x[c].
func MatVecF32(y []float32, w []float32, x []float32, rows, cols int) {
	checkMat("MatVecF32", len(y), len(w), len(x), 1, rows, cols)
	k := matVecF32Fast(y, w, x, rows, cols)
	if k < cols || k == 0 {
		matVecF32Generic(y, w, x, rows, cols, k)
	}
}

// checkMat panics unless y holds n*rows, w rows*cols and x n*cols values.
func checkMat(kernel string, ny, nw, nx, n, rows, cols int) {
	switch {
	case n < 0 || rows < 0 || cols < 0:
		panic(fmt.Sprintf("kernels.%s: negative shape n=%d rows=%d cols=%d", kernel, n, rows, cols))
	case nw < rows*cols:
		panic(fmt.Sprintf("kernels.%s: w has %d values, want rows*cols = %d*%d", kernel, nw, rows, cols))
	case nx < n*cols:
		panic(fmt.Sprintf("kernels.%s: x has %d values, want %d*%d", kernel, nx, n, cols))
	case ny < n*rows:
		panic(fmt.Sprintf("kernels.%s: y has %d values, want %d*%d", kernel, ny, n, rows))
	}
}
