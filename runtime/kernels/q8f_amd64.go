//go:build !noasm

package kernels

import "fmt"

// q8FloatFast reports whether MatMulQ8Float has assembly here.
func q8FloatFast() bool { return useAVX2 }

// q8FloatImpl names the kernel of MatMulQ8Float for Kernels.
func q8FloatImpl() string {
	switch {
	case useAVX512:
		return fmt.Sprintf("avx512 %dx%d (n >= %d)", zTokens, zRows, q8FloatMinTokens)
	case useAVX2:
		return fmt.Sprintf("avx2 %dx%d (n >= %d)", tileTokens, tileRows, q8FloatMinTokens)
	}
	return "go"
}

// matMulQ8FloatFast computes the first k columns of every output of
// MatMulQ8Float (k = cols&^15 with AVX-512, cols&^7 with AVX2) and returns
// k, or 0 without usable assembly. The loops are matMulF16Z's, outermost
// first: column blocks of at most zColBlock (the first sets the outputs,
// later ones add to them, each scaled by the row's scale: the scale
// distributes over the blocks), row blocks whose weights fit in L2, tiles
// of tokens, and in one assembly call all whole panels of the block (then
// its leftover rows as 1-row panels).
func matMulQ8FloatFast(y []float32, ldy int, x []float32, n int, w []int8, scale []uint16, rows, cols int) int {
	if !useAVX2 {
		return 0
	}
	tab, T, R, lanes := gemmQ8YPanels[:], tileTokens, tileRows, 8
	if useAVX512 {
		tab, T, R, lanes = gemmQ8ZPanels[:], zTokens, zRows, 16
	}
	k := cols &^ (lanes - 1)
	if k == 0 {
		return 0
	}
	kc := colBlocks(k)
	for k0 := 0; k0 < k; k0 += kc {
		kw, add := min(kc, k-k0), min(k0, 1)
		rb := blockRowsOf(kw, R)
		for r0 := 0; r0 < rows; r0 += rb {
			r1 := min(rows, r0+rb)
			panels := (r1 - r0) / R
			re := r0 + panels*R
			for t := 0; t < n; t += T {
				tt := min(T, n-t)
				xt := x[t*cols+k0:]
				if panels > 0 {
					tab[tt-1][1](y[t*ldy+r0:], ldy, xt, w[r0*cols+k0:], scale[r0:], cols, kw, panels, add)
				}
				if re < r1 {
					tab[tt-1][0](y[t*ldy+re:], ldy, xt, w[re*cols+k0:], scale[re:], cols, kw, r1-re, add)
				}
			}
		}
	}
	return k
}
