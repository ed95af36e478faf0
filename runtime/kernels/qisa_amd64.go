//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

// useVNNI selects the quantized kernels built on VPDPBUSD (q4) and VPDPWSSD
// (q8). They use the AVX-512 (EVEX) encodings on 256-bit vectors, hence
// AVX512VL besides AVX512_VNNI; x/sys/cpu also checks that the OS saves
// AVX-512 state. Otherwise the AVX2 kernels (VPMADDUBSW / VPMADDWD) run
// where useAVX2 does.
var useVNNI = useAVX2 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL

// q4PanelFunc is the signature of the q4 kernels (see internal/gen/quant.go).
type q4PanelFunc = func(y []float32, ldy int, x []int8, xstride int, m []float32, mstride int, w []byte, wstride int, scale, offset []uint16, sstride, k, panels int)

// QuantKernels names the instruction set the quantized matrix kernels use on
// this machine: "vnni", "avx2" or "go".
func QuantKernels() string {
	switch {
	case useVNNI:
		return "vnni"
	case useAVX2:
		return "avx2"
	}
	return "go"
}

// matMulQ4Fast computes the first k = cols&^63 columns (whole 64-column
// steps; all of them unless group is 32 and cols an odd number of groups)
// of every output and returns k, or 0 without usable assembly.
func matMulQ4Fast(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows int) int {
	cols := a.cols
	k := cols &^ 63
	if !useAVX2 || k == 0 {
		return 0
	}
	tab := &q4AVX2Panels
	if useVNNI {
		tab = &q4VNNIPanels
	}
	gi := map[int]int{32: 0, 64: 1, 128: 2}[group]
	ng := cols / group
	rb := rows
	if a.n > 1 {
		rb = blockRows(cols/2) / q4Rows * q4Rows
	}
	xs, ms := a.nc*64, a.nc*16
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		panels := (r1 - r0) / q4Rows
		for t := 0; t < a.n; t += q4Tokens {
			tt := min(q4Tokens, a.n-t)
			run := func(r, rr, np int) {
				e := r + rr*np
				tab[gi][tt-1][min(rr-1, 1)](y[t*ldy+r:], ldy, a.qp[t*xs:], xs, a.meta[t*ms:], ms,
					w[r*cols/2:e*cols/2], cols/2, scale[r*ng:e*ng], offset[r*ng:e*ng], ng, k, np)
			}
			if panels > 0 {
				run(r0, q4Rows, panels)
			}
			if left := r1 - r0 - panels*q4Rows; left > 0 {
				run(r0+panels*q4Rows, 1, left)
			}
		}
	}
	return k
}
