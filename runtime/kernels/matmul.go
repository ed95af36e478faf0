package kernels

// MatMulF16 computes a matrix product with fp16 weights, the prefill path:
//
//	y[t*rows+r] = sum_c x[t*cols+c] * w[r*cols+c]   for t < n, r < rows
//
// that is Y[n, rows] = X[n, cols] · Wᵀ with W [rows, cols] row-major fp16
// bits (HF's Linear weight, read in place). Each fp16 weight vector is widened
// once per tile and reused for 4 tokens. It runs on the calling goroutine;
// Pool.MatMulF16 splits the rows over cores.
func MatMulF16(y, x []float32, w []uint16, n, rows, cols int) {
	checkMat("MatMulF16", len(y), len(w), len(x), n, rows, cols)
	matMulF16Rows(y, x, w, n, rows, cols, 0, rows)
}

// MatMulF32 is MatMulF16 for float32 weights.
func MatMulF32(y, x, w []float32, n, rows, cols int) {
	checkMat("MatMulF32", len(y), len(w), len(x), n, rows, cols)
	matMulF32Rows(y, x, w, n, rows, cols, 0, rows)
}

// matMulF16Rows computes output rows [lo, hi) of MatMulF16 for all tokens.
func matMulF16Rows(y, x []float32, w []uint16, n, rows, cols, lo, hi int) {
	if n == 0 || lo >= hi {
		return
	}
	if cols == 0 {
		zeroRows(y, n, rows, lo, hi)
		return
	}
	k := matMulF16Fast(y, x, w, n, rows, cols, lo, hi)
	if k < cols {
		matMulF16Generic(y, x, w, n, rows, cols, lo, hi, k)
	}
}

// matMulF32Rows computes output rows [lo, hi) of MatMulF32 for all tokens.
func matMulF32Rows(y, x, w []float32, n, rows, cols, lo, hi int) {
	if n == 0 || lo >= hi {
		return
	}
	if cols == 0 {
		zeroRows(y, n, rows, lo, hi)
		return
	}
	k := matMulF32Fast(y, x, w, n, rows, cols, lo, hi)
	if k < cols {
		matMulF32Generic(y, x, w, n, rows, cols, lo, hi, k)
	}
}

// zeroRows sets output rows [lo, hi) of all n tokens to 0 (an empty sum).
func zeroRows(y []float32, n, rows, lo, hi int) {
	for t := 0; t < n; t++ {
		clear(y[t*rows+lo : t*rows+hi])
	}
}

// gemmBlockBytes is the weight block the assembly GEMMs keep in L2 while
// every token tile of the batch sweeps it (a fifth of a typical 512 KiB L2,
// leaving room for the activations; the tests shrink it to force several
// blocks).
var gemmBlockBytes = 96 << 10
