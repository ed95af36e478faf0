//go:build !noasm

package kernels

// Cache blocking of gemmNN's assembly: B is swept in blocks of nnKBlock rows
// by nnColBlock columns (32 KiB, L1-sized at k = 64, the S = Q·Kᵀ of
// attention; 64 KiB at most, in L2, for the long k of P·V), and every row
// tile of A reuses the block before the next one is loaded.
const (
	nnColBlock = 128
	nnKBlock   = 256
)

// gemmNNFast runs the NN kernels on the first columns of C, a multiple of the
// vector width, and returns how many: 64-column panels then 16-column ones
// on AVX-512, 16 then 8 on AVX2, each for row tiles of up to nnRows rows.
// The first block of k sets C (unless add), later ones add to it.
func gemmNNFast(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) int {
	tab, lanes, wide := &gemmNNZKernels, 16, 64
	switch {
	case useAVX512:
	case useAVX2:
		tab, lanes, wide = &gemmNNYKernels, 8, 16
	default:
		return 0
	}
	nf := n / lanes * lanes
	if nf == 0 {
		return 0
	}
	for k0 := 0; k0 < k; k0 += nnKBlock {
		kw := min(nnKBlock, k-k0)
		addi := 0
		if add || k0 > 0 {
			addi = 1
		}
		for j0 := 0; j0 < nf; j0 += nnColBlock {
			cols := min(nnColBlock, nf-j0)
			nw := cols / wide
			narrow := (cols - nw*wide) / lanes
			bb := b[k0*ldb+j0:]
			for i0 := 0; i0 < m; i0 += nnRows {
				rr := min(nnRows, m-i0)
				cc, aa := c[i0*ldc+j0:], a[i0*lda+k0:]
				if nw > 0 {
					tab[rr-1][1](cc, ldc, aa, lda, bb, ldb, kw, nw, addi)
				}
				if narrow > 0 {
					tab[rr-1][0](cc[nw*wide:], ldc, aa, lda, bb[nw*wide:], ldb, kw, narrow, addi)
				}
			}
		}
	}
	return nf
}
