//go:build !noasm

package kernels

//go:generate go run -C internal/gen . -set q16 -pkg kernels -out ../../q16kernels_amd64.s -stubs ../../q16stubs_amd64.go -q16tiles ../../q16tiles_amd64.go -neon ../../q16kernels_arm64.s -neongo ../../q16stubs_arm64.go

// q16PanelFunc is the signature of the amd64 q8 kernels (see
// internal/gen/q16.go).
type q16PanelFunc = func(y []float32, ldy int, x []int16, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int)

// q16Planes: the amd64 kernels multiply Int16Acts' int16 values directly,
// so Quantize builds no int8 planes.
const q16Planes = false

// matMulQ8Fast computes the first k = cols&^31 columns (whole blocks) of
// every output and returns k, or 0 without usable assembly. A GEMM walks
// the rows in blocks that stay in L2 and, per block, every tile of
// q16Tokens tokens, as matMulF16Fast does.
func matMulQ8Fast(y []float32, ldy int, a *Int16Acts, w []int8, scale []uint16, rows int) int {
	cols := a.cols
	k := cols &^ 31
	if !useAVX2 || k == 0 {
		return 0
	}
	tab := &q8A16AVX2Panels
	if useVNNI {
		tab = &q8A16VNNIPanels
	}
	rb := rows
	if a.n > 1 {
		rb = blockRows(cols) / q16Rows * q16Rows
	}
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		panels := (r1 - r0) / q16Rows
		for t := 0; t < a.n; t += q16Tokens {
			tt := min(q16Tokens, a.n-t)
			run := func(r, rr, np int) {
				tab[tt-1][min(rr-1, 1)](y[t*ldy+r:], ldy, a.q[t*cols:], cols, a.d[t*a.nb:], a.nb,
					w[r*cols:(r+rr*np)*cols], cols, scale[r:r+rr*np], k, np)
			}
			if panels > 0 {
				run(r0, q16Rows, panels)
			}
			if left := r1 - r0 - panels*q16Rows; left > 0 {
				run(r0+panels*q16Rows, 1, left)
			}
		}
	}
	return k
}
