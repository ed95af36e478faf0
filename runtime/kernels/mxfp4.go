package kernels

import (
	"fmt"
	"math"
)

// Products with mxfp4 weights (package quant has the format): codes w [rows, cols/2], two FP4
// E2M1 codes a byte with the even column in the low nibble, and E8M0 scales e [rows, cols/32],
// rows after one another; cols is a positive multiple of 32. A weight is fp4(q)·2^(e−127) in
// float32, exact, so dequantizing is the same bit for bit everywhere; the products multiply
// those weights with float32 activations as they are (no activation quantization):
//
//   - MatVecMXFP4, the decode product (GEMV): one row at a time, each 32-column block's 16
//     possible weights a table scaled by the block's power of two, looked up per code: AVX-512
//     VPERMPS on a 16-entry table, AVX2 VPERMPS on the 8 magnitudes and the sign bit moved into
//     place, NEON TBL on the table's bytes (internal/gen/mxfp4.go, mxfp4_arm64.s);
//   - MatMulMXFP4, the batched product (GEMM): panels of rows dequantized by the same
//     kernels and multiplied with every token by the float32 GEMM, as the super-block types'
//     float products do.
//
// The Go functions here are the twins the assembly is tested against (mxfp4_test.go, on every
// instruction-set level, against a float64 reference of quant.DequantizeRowMXFP4's weights).

const mxBlock = 32 // inputs per scale (dtype.MXBlock)

// fp4Values holds the value of each FP4 E2M1 code (quant.FP4), -0 for code 8; the NEON
// kernels read it.
var fp4Values = func() (v [16]float32) {
	mag := [8]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for q := range v {
		v[q] = mag[q&7]
		if q >= 8 {
			v[q] = -v[q] // -0 for code 8: negating 0 flips the sign bit
		}
	}
	return v
}()

// e8m0Scales holds 2^(e−127) for every E8M0 code e (quant.E8M0): a subnormal for 0, NaN for
// 255; the NEON kernels read it.
var e8m0Scales = func() (s [256]float32) {
	for e := range s {
		switch e {
		case 0:
			s[e] = math.Float32frombits(0x00400000)
		case 255:
			s[e] = float32(math.NaN())
		default:
			s[e] = math.Float32frombits(uint32(e) << 23)
		}
	}
	return s
}()

// checkMXFP4 panics on an mxfp4 product's inconsistent lengths.
func checkMXFP4(kernel string, nw, ne, nx, n, rows, cols int) {
	switch {
	case cols <= 0 || cols%mxBlock != 0:
		panic(fmt.Sprintf("kernels.%s: cols %d is not a positive multiple of %d", kernel, cols, mxBlock))
	case rows < 0 || n < 0:
		panic(fmt.Sprintf("kernels.%s: negative rows %d or tokens %d", kernel, rows, n))
	case nw < rows*cols/2:
		panic(fmt.Sprintf("kernels.%s: w has %d bytes, want rows*cols/2 = %d*%d/2", kernel, nw, rows, cols))
	case ne < rows*cols/mxBlock:
		panic(fmt.Sprintf("kernels.%s: e has %d scales, want rows*cols/32 = %d*%d/32", kernel, ne, rows, cols))
	case nx < n*cols:
		panic(fmt.Sprintf("kernels.%s: x has %d values, want n*cols = %d*%d", kernel, nx, n, cols))
	}
}

// MatVecMXFP4 computes y[r] = Σ_c W[r,c]·x[c] for r < rows: W the mxfp4 matrix of codes w and
// scales e, dequantized as quant.DequantizeRowMXFP4 defines it, x the cols activations.
func MatVecMXFP4(y []float32, w, e []byte, x []float32, rows, cols int) {
	checkMXFP4("MatVecMXFP4", len(w), len(e), len(x), 1, rows, cols)
	if len(y) < rows {
		panic(fmt.Sprintf("kernels.MatVecMXFP4: y has %d values, want rows = %d", len(y), rows))
	}
	if rows == 0 {
		return
	}
	if !matVecMXFP4Fast(y, w, e, x, rows, cols) {
		matVecMXFP4Generic(y, w, e, x, rows, cols)
	}
}

// matVecMXFP4Generic is MatVecMXFP4 in Go: each weight dequantized as dequantMXFP4Generic
// does, times its activation, summed in four partial sums per row.
func matVecMXFP4Generic(y []float32, w, e []byte, x []float32, rows, cols int) {
	nb := cols / mxBlock
	for r := 0; r < rows; r++ {
		var acc [4]float32
		for b := 0; b < nb; b++ {
			s := e8m0Scales[e[r*nb+b]]
			codes := w[(r*nb+b)*mxBlock/2 : (r*nb+b+1)*mxBlock/2]
			xb := x[b*mxBlock : (b+1)*mxBlock]
			for i, q := range codes {
				k := i & 3
				acc[k] += fp4Values[q&15]*s*xb[2*i] + fp4Values[q>>4]*s*xb[2*i+1]
			}
		}
		y[r] = (acc[0] + acc[1]) + (acc[2] + acc[3])
	}
}

// dequantMXFP4 writes the weights of the len(dst)/32 consecutive blocks of codes w and scales
// e (whole rows, or several rows back to back) to dst.
func dequantMXFP4(dst []float32, w, e []byte) {
	if len(dst) == 0 {
		return
	}
	if !dequantMXFP4Fast(dst, w, e) {
		dequantMXFP4Generic(dst, w, e)
	}
}

// dequantMXFP4Generic is dequantMXFP4 in Go (quant.DequantizeRowMXFP4).
func dequantMXFP4Generic(dst []float32, w, e []byte) {
	for b := 0; b < len(dst)/mxBlock; b++ {
		s := e8m0Scales[e[b]]
		y := dst[b*mxBlock : (b+1)*mxBlock]
		for i, q := range w[b*mxBlock/2 : (b+1)*mxBlock/2] {
			y[2*i] = fp4Values[q&15] * s
			y[2*i+1] = fp4Values[q>>4] * s
		}
	}
}

// MatMulMXFP4 computes y[t*ldy+r] = Σ_c x[t*cols+c]·W[r,c] for t < n, r < rows (W as in
// MatVecMXFP4). A row range [lo, hi) of a larger matrix is y[lo:] with ldy = the full row
// count, w and e from row lo and rows = hi-lo. One token takes MatVecMXFP4; more dequantize
// panels of rows that stay in L2 and multiply each with all the tokens by the float32 GEMM, so
// every code is read once per call.
func MatMulMXFP4(y []float32, ldy int, x []float32, n int, w, e []byte, rows, cols int) {
	checkMXFP4("MatMulMXFP4", len(w), len(e), len(x), n, rows, cols)
	checkQ("MatMulMXFP4", len(y), ldy, n, rows)
	if n == 0 || rows == 0 {
		return
	}
	if n == 1 {
		MatVecMXFP4(y, w, e, x, rows, cols)
		return
	}
	nb := cols / mxBlock
	pr := max(1, min(rows, kPanelFloats/cols))
	pp, tp := kFloats(pr*cols), kFloats(n*pr)
	panel, tmp := *pp, *tp
	for r0 := 0; r0 < rows; r0 += pr {
		m := min(pr, rows-r0)
		dequantMXFP4(panel[:m*cols], w[r0*cols/2:(r0+m)*cols/2], e[r0*nb:(r0+m)*nb])
		matMulF32Rows(tmp[:n*m], x[:n*cols], panel[:m*cols], n, m, cols, 0, m)
		for t := 0; t < n; t++ {
			copy(y[t*ldy+r0:t*ldy+r0+m], tmp[t*m:(t+1)*m])
		}
	}
	kPool.Put(pp)
	kPool.Put(tp)
}
