//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

// useVNNI selects the quantized kernels built on VPDPBUSD. They use its
// AVX-512 (EVEX) encoding on 256-bit vectors, hence AVX512VL besides
// AVX512_VNNI; x/sys/cpu also checks that the OS saves AVX-512 state.
// Otherwise the AVX2 kernels (VPMADDUBSW + VPMADDWD) run where useAVX2 does.
var useVNNI = useAVX2 && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL

// q8PanelFunc is the signature of the q8 kernels (see internal/gen/quant.go).
type q8PanelFunc = func(y []float32, ldy int, x []byte, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int)

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

// matMulQ8Fast computes the first k = cols&^31 columns (whole blocks) of
// every output and returns k, or 0 without usable assembly. A GEMM walks
// the rows in blocks that stay in L2 and, per block, every tile of q8Tokens
// tokens, as matMulF16Fast does.
func matMulQ8Fast(y []float32, ldy int, a *Int8Acts, w []int8, scale []uint16, rows int) int {
	cols := a.cols
	k := cols &^ 31
	if !useAVX2 || k == 0 {
		return 0
	}
	tab := &q8AVX2Panels
	if useVNNI {
		tab = &q8VNNIPanels
	}
	rb := rows
	if a.n > 1 {
		rb = blockRows(cols) / q8Rows * q8Rows
	}
	xs := (cols / 32) * 64
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		panels := (r1 - r0) / q8Rows
		for t := 0; t < a.n; t += q8Tokens {
			tt := min(q8Tokens, a.n-t)
			run := func(r, rr, np int) {
				tab[tt-1][min(rr-1, 1)](y[t*ldy+r:], ldy, a.q8[t*xs:], xs, a.d[t*a.nb:], a.nb,
					w[r*cols:(r+rr*np)*cols], cols, scale[r:r+rr*np], k, np)
			}
			if panels > 0 {
				run(r0, q8Rows, panels)
			}
			if left := r1 - r0 - panels*q8Rows; left > 0 {
				run(r0+panels*q8Rows, 1, left)
			}
		}
	}
	return k
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
