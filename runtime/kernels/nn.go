package kernels

import "fmt"

// gemmNN computes C = A·B for row-major A [m, k], B [k, n] and C [m, n] with
// row strides lda, ldb and ldc, setting C or, with add, adding to it:
//
//	c[i*ldc+j] (+)= sum_{kk<k} a[i*lda+kk] * b[kk*ldb+j]   for i < m, j < n
//
// Attention uses it for its two products (attention_batch.go). The assembly
// keeps a tile of C in registers and broadcasts A (no horizontal sums), so
// it is efficient for short k too; each output is one chain of fused
// multiply-adds in k order, the Go twin's the same sum with rounded products.
func gemmNN(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) {
	switch {
	case m < 0 || n < 0 || k < 0:
		panic(fmt.Sprintf("kernels.gemmNN: negative shape m=%d n=%d k=%d", m, n, k))
	case m == 0 || n == 0:
		return
	case len(c) < (m-1)*ldc+n || ldc < n:
		panic(fmt.Sprintf("kernels.gemmNN: c has %d values for %d rows of %d (ldc %d)", len(c), m, n, ldc))
	case k > 0 && (len(a) < (m-1)*lda+k || lda < k):
		panic(fmt.Sprintf("kernels.gemmNN: a has %d values for %d rows of %d (lda %d)", len(a), m, k, lda))
	case k > 0 && (len(b) < (k-1)*ldb+n || ldb < n):
		panic(fmt.Sprintf("kernels.gemmNN: b has %d values for %d rows of %d (ldb %d)", len(b), k, n, ldb))
	}
	if k == 0 {
		if !add {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	j0 := gemmNNFast(c, ldc, a, lda, b, ldb, m, n, k, add)
	if j0 < n {
		gemmNNGeneric(c, ldc, a, lda, b, ldb, m, n, k, j0, add)
	}
}

// gemmNNGeneric is the pure-Go twin of gemmNN for columns [j0, n): row by
// row, it adds a[i][kk] times row kk of B to row i of C in k order.
func gemmNNGeneric(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k, j0 int, add bool) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc+j0 : i*ldc+n]
		if !add {
			clear(ci)
		}
		ai := a[i*lda : i*lda+k]
		for kk, av := range ai {
			bk := b[kk*ldb+j0 : kk*ldb+n]
			bk = bk[:len(ci)]
			for j, bv := range bk {
				ci[j] += float32(av * bv)
			}
		}
	}
}
