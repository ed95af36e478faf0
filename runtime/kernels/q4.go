package kernels

import "fmt"

// MatVecQ4 computes one matrix-vector product with q4 weights (uint4 data
// packed two per byte, low nibble first; fp16 scale and offset per group of
// `group` columns; see package quant), the decode hot path:
//
//	y[r] = sum_c scale[r,g] * (q[r,c] - offset[r,g]) * x[c]   with g = c/group
//
// w is [rows, cols/2] bytes and scale, offset are [rows, cols/group]; group
// is 32, 64 or 128 and divides cols. x is first quantized to int8 in blocks
// of 32 (see Int8Acts), so the result is that of the dequantized
// activations, within float32 rounding. To multiply one x by several
// matrices or row ranges, quantize it once and call MatMulQ4Acts. A row
// range [lo, hi) is w[lo*cols/2:hi*cols/2], scale and offset
// [lo*cols/group:hi*cols/group], y[lo:hi] with rows = hi-lo.
func MatVecQ4(y []float32, w []byte, scale, offset []uint16, group int, x []float32, rows, cols int) {
	MatMulQ4(y, x, w, scale, offset, group, 1, rows, cols)
}

// MatMulQ4 computes a matrix product with q4 weights, the prefill path:
// y[t*rows+r] = sum_c x[t*cols+c] * W[r, c] for t < n, r < rows, with W
// dequantized as in MatVecQ4 and x quantized as there, or, for the batches
// where Q4FloatActs(n) holds, multiplied as float32 by MatMulQ4Float.
func MatMulQ4(y, x []float32, w []byte, scale, offset []uint16, group, n, rows, cols int) {
	checkMat("MatMulQ4", len(y), rows*cols, len(x), n, rows, cols) // w is checked by MatMulQ4Acts
	if Q4FloatActs(n) {
		MatMulQ4Float(y, rows, x, n, w, scale, offset, group, rows, cols)
		return
	}
	a := actsPool.Get().(*Int8Acts)
	a.Quantize(x, n, cols)
	MatMulQ4Acts(y, rows, a, w, scale, offset, group, rows)
	actsPool.Put(a)
}

// MatMulQ4Acts multiplies the a.N() quantized tokens of a by the q4 matrix
// of rows x a.Cols() weights given by w, scale, offset and group:
//
//	y[t*ldy+r] = sum_c dequant(a)[t, c] * W[r, c]   for t < a.N(), r < rows
//
// With a.N() == 1 it is the GEMV. A row range [lo, hi) of a larger matrix is
// y[lo:] with ldy = the full row count, the row range of w, scale and
// offset, and rows = hi-lo (see MatMulQ8Acts).
func MatMulQ4Acts(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows int) {
	n, cols := a.n, a.cols
	checkQ("MatMulQ4Acts", len(y), ldy, n, rows)
	if group != 32 && group != 64 && group != 128 || cols%group != 0 {
		panic(fmt.Sprintf("kernels.MatMulQ4Acts: group %d: want 32, 64 or 128 dividing cols = %d", group, cols))
	}
	switch ng := rows * cols / group; {
	case len(w) < rows*cols/2:
		panic(fmt.Sprintf("kernels.MatMulQ4Acts: w has %d bytes, want rows*cols/2 = %d*%d/2", len(w), rows, cols))
	case len(scale) < ng || len(offset) < ng:
		panic(fmt.Sprintf("kernels.MatMulQ4Acts: %d scales and %d offsets, want rows*cols/group = %d", len(scale), len(offset), ng))
	}
	if n == 0 || rows == 0 {
		return
	}
	k := matMulQ4Fast(y, ldy, a, w, scale, offset, group, rows)
	if k < cols || k == 0 {
		matMulQ4Generic(y, ldy, a, w, scale, offset, group, rows, k)
	}
}

// matMulQ4Generic adds (k > 0) or sets (k == 0) the contribution of columns
// [k, cols) to every output. Per block b of 32 columns (inside group g) it
// adds scale_g * (d_b*I_b - offset_g*bs_b), where I_b is the exact integer
// dot product of the levels with the quantized activations and d_b*I_b -
// offset_g*bs_b is the block's sum of (q - offset) * dequantized x. k is a
// multiple of 64.
func matMulQ4Generic(y []float32, ldy int, a *Int8Acts, w []byte, scale, offset []uint16, group, rows, k int) {
	tab := f16Table()
	cols := a.cols
	ng := cols / group
	for t := 0; t < a.n; t++ {
		xq := a.q[t*cols : (t+1)*cols]
		d, bs := a.d[t*a.nb:(t+1)*a.nb], a.bs[t*a.nb:(t+1)*a.nb]
		for r := 0; r < rows; r++ {
			row := w[r*cols/2 : (r+1)*cols/2]
			var s float32
			for c0 := k; c0 < cols; c0 += 32 {
				g := r*ng + c0/group
				var dot int32
				for i, v := range row[c0/2 : c0/2+16] {
					dot += int32(v&15)*int32(xq[c0+2*i]) + int32(v>>4)*int32(xq[c0+2*i+1])
				}
				b := c0 / 32
				s += tab[scale[g]] * (d[b]*float32(dot) - tab[offset[g]]*bs[b])
			}
			if k == 0 {
				y[t*ldy+r] = s
			} else {
				y[t*ldy+r] += s
			}
		}
	}
}
