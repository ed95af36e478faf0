//go:build !noasm

package kernels

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

// hasVBMI reports AVX512_VBMI (VPMULTISHIFTQB), which the AVX-512 q4 float
// kernels need besides AVX512F/VL; without it they run the AVX2 ones.
var hasVBMI = cpu.X86.HasAVX512VBMI

// q4FloatZ reports whether MatMulQ4Float runs the AVX-512 kernels.
func q4FloatZ() bool { return useAVX512 && hasVBMI }

// q4FloatFast reports whether MatMulQ4Float has assembly here.
func q4FloatFast() bool { return useAVX2 }

// q4FloatImpl names the kernel of MatMulQ4Float for Kernels.
func q4FloatImpl() string {
	switch {
	case q4FloatZ():
		return fmt.Sprintf("avx512vbmi %dx%d (n >= %d)", zq4Tokens, zq4Rows, q4FloatMinTokens)
	case useAVX2:
		return fmt.Sprintf("avx2 %dx%d (n >= %d)", tileTokens, tileRows, q4FloatMinTokens)
	}
	return "go"
}

// q4ColBlock splits cols (a multiple of group) into nearly equal blocks of
// about zColBlock columns, each a multiple of group (so that no group
// straddles two blocks), and returns the width of all but possibly the
// last.
func q4ColBlock(cols, group int) int {
	nb := (cols + zColBlock - 1) / zColBlock
	return ((cols+nb-1)/nb + group - 1) / group * group
}

// q4PanelScales writes the float32 scales and offsets of the panel of
// height rows from row r0 where the kernels read them: from sc[r0*2*ng], for
// each group g the panel's height scales, then its height offsets.
func q4PanelScales(sc []float32, scale, offset []uint16, tab *[1 << 16]float32, ng, r0, height int) {
	out := sc[r0*2*ng : (r0+height)*2*ng]
	for r := 0; r < height; r++ {
		s, o := scale[(r0+r)*ng:(r0+r+1)*ng], offset[(r0+r)*ng:(r0+r+1)*ng]
		for g := range s {
			out[g*2*height+r] = tab[s[g]]
			out[g*2*height+height+r] = tab[o[g]]
		}
	}
}

// matMulQ4FloatFast computes every output of MatMulQ4Float and returns
// true, or false without usable assembly. Every column is the assembly's
// (cols is a multiple of the group, hence of its 16- or 8-column step).
// The scales and offsets are first widened to float32 in the order the
// kernels read them (q4PanelScales). The loops are matMulQ8FloatFast's,
// outermost first: column blocks of about zColBlock columns, whole groups
// (the first sets the outputs, later ones add to them), row blocks whose
// weights fit in L2, tiles of tokens, and in one assembly call all whole
// panels of the block (then its leftover rows as 1-row panels).
func matMulQ4FloatFast(y []float32, ldy int, x []float32, n int, w []byte, scale, offset []uint16, group, rows, cols int) bool {
	if !useAVX2 {
		return false
	}
	tab, T, R := gemmQ4YPanels[:], tileTokens, tileRows
	if q4FloatZ() {
		tab, T, R = gemmQ4ZPanels[:], zq4Tokens, zq4Rows
	}
	ng := cols / group
	kc := q4ColBlock(cols, group)
	rb := blockRowsOf(kc/2, R) // one partition of the rows for all column blocks
	p := q4Floats(2 * rows * ng)
	sc := *p
	f16 := f16Table()
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		re := r0 + (r1-r0)/R*R
		for r := r0; r < re; r += R {
			q4PanelScales(sc, scale, offset, f16, ng, r, R)
		}
		for r := re; r < r1; r++ {
			q4PanelScales(sc, scale, offset, f16, ng, r, 1)
		}
	}
	gmask := group/2 - 1
	for k0 := 0; k0 < cols; k0 += kc {
		kw, add, g0 := min(kc, cols-k0), min(k0, 1), k0/group
		for r0 := 0; r0 < rows; r0 += rb {
			r1 := min(rows, r0+rb)
			panels := (r1 - r0) / R
			re := r0 + panels*R
			for t := 0; t < n; t += T {
				tt := min(T, n-t)
				xt := x[t*cols+k0:]
				if panels > 0 {
					tab[tt-1][1](y[t*ldy+r0:], ldy, xt, w[r0*cols/2+k0/2:], sc[r0*2*ng+g0*2*R:], cols, kw, gmask, 8*R*ng, panels, add)
				}
				if re < r1 {
					tab[tt-1][0](y[t*ldy+re:], ldy, xt, w[re*cols/2+k0/2:], sc[re*2*ng+g0*2:], cols, kw, gmask, 8*ng, r1-re, add)
				}
			}
		}
	}
	q4RowPool.Put(p)
	return true
}
