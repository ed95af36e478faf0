package kernels

import (
	"fmt"
	"sync"
)

// MatVecQ8 computes one matrix-vector product with q8 weights (int8 data,
// one fp16 scale per row; see package quant), the decode hot path:
//
//	y[r] = scale[r] * sum_c w[r*cols+c] * x[c]   for r < rows
//
// x is first quantized to 16-bit integers in blocks of 32 (see Int16Acts),
// so the result is that of the dequantized activations, within float32
// rounding. To multiply one x by several matrices or row ranges, quantize it
// once with Int16Acts.Quantize and call MatMulQ8Acts instead. A row range [lo, hi) is
// w[lo*cols:hi*cols], scale[lo:hi], y[lo:hi] with rows = hi-lo.
func MatVecQ8(y []float32, w []int8, scale []uint16, x []float32, rows, cols int) {
	MatMulQ8(y, x, w, scale, 1, rows, cols)
}

// MatMulQ8 computes a matrix product with q8 weights, the prefill path:
//
//	y[t*rows+r] = scale[r] * sum_c x[t*cols+c] * w[r*cols+c]   for t < n, r < rows
//
// that is Y[n, rows] = X[n, cols] · Wᵀ, with x quantized as in MatVecQ8,
// or, for the batches where Q8FloatActs(n) holds, multiplied as float32 by
// MatMulQ8Float.
func MatMulQ8(y, x []float32, w []int8, scale []uint16, n, rows, cols int) {
	checkMat("MatMulQ8", len(y), len(w), len(x), n, rows, cols)
	if Q8FloatActs(n) {
		MatMulQ8Float(y, rows, x, n, w, scale, rows, cols)
		return
	}
	a := acts16Pool.Get().(*Int16Acts)
	a.Quantize(x, n, cols)
	MatMulQ8Acts(y, rows, a, w, scale, rows)
	acts16Pool.Put(a)
}

// MatMulQ8Acts multiplies the a.N() quantized tokens of a by the q8 matrix
// w [rows, a.Cols()] with scales scale [rows]:
//
//	y[t*ldy+r] = scale[r] * sum_c dequant(a)[t, c] * w[r*cols+c]   for t < a.N(), r < rows
//
// With a.N() == 1 it is the GEMV. For a row range [lo, hi) of a larger
// matrix pass y[lo:], ldy = the full row count, w[lo*cols:hi*cols],
// scale[lo:hi] and rows = hi-lo: every output lands where the whole
// product puts it, so goroutines can share one y.
func MatMulQ8Acts(y []float32, ldy int, a *Int16Acts, w []int8, scale []uint16, rows int) {
	n, cols := a.n, a.cols
	checkQ("MatMulQ8Acts", len(y), ldy, n, rows)
	switch {
	case len(w) < rows*cols:
		panic(fmt.Sprintf("kernels.MatMulQ8Acts: w has %d values, want rows*cols = %d*%d", len(w), rows, cols))
	case len(scale) < rows:
		panic(fmt.Sprintf("kernels.MatMulQ8Acts: scale has %d values, want rows = %d", len(scale), rows))
	}
	if n == 0 || rows == 0 {
		return
	}
	k := matMulQ8Fast(y, ldy, a, w, scale, rows)
	if k < cols || k == 0 {
		matMulQ8Generic(y, ldy, a, w, scale, rows, k)
	}
}

// actsPool and acts16Pool lend Int8Acts and Int16Acts to the float-input
// entry points, so that they allocate nothing once warm.
var (
	actsPool   = sync.Pool{New: func() any { return new(Int8Acts) }}
	acts16Pool = sync.Pool{New: func() any { return new(Int16Acts) }}
)

// checkQ panics unless y holds outputs t*ldy+r for t < n, r < rows.
func checkQ(kernel string, ny, ldy, n, rows int) {
	switch {
	case rows < 0:
		panic(fmt.Sprintf("kernels.%s: negative rows %d", kernel, rows))
	case n > 1 && ldy < rows:
		panic(fmt.Sprintf("kernels.%s: ldy %d < rows %d", kernel, ldy, rows))
	case n > 0 && rows > 0 && ny < (n-1)*ldy+rows:
		panic(fmt.Sprintf("kernels.%s: y has %d values, want (n-1)*ldy+rows = %d*%d+%d", kernel, ny, n-1, ldy, rows))
	}
}

// matMulQ8Generic adds (k > 0) or sets (k == 0) the contribution of columns
// [k, cols) to every output: per block of 32 columns an exact integer dot
// product, scaled by the block's activation scale, summed in float32 and
// scaled by the row's scale. k is a multiple of 32.
func matMulQ8Generic(y []float32, ldy int, a *Int16Acts, w []int8, scale []uint16, rows, k int) {
	tab := f16Table()
	cols := a.cols
	for t := 0; t < a.n; t++ {
		xq := a.q[t*cols : (t+1)*cols]
		d := a.d[t*a.nb : (t+1)*a.nb]
		for r := 0; r < rows; r++ {
			row := w[r*cols : (r+1)*cols]
			var s float32
			for c0 := k; c0 < cols; c0 += 32 {
				c1 := min(cols, c0+32)
				s += d[c0/32] * float32(dotI8I16(row[c0:c1], xq[c0:c1]))
			}
			s *= tab[scale[r]]
			if k == 0 {
				y[t*ldy+r] = s
			} else {
				y[t*ldy+r] += s
			}
		}
	}
}

// dotI8I16 returns the exact integer dot product of int8 weights and int16
// activations, at most 32 of each: |sum| <= 32*127*32258 < 2^31.
func dotI8I16(w []int8, x []int16) int32 {
	x = x[:len(w)]
	var s int32
	for i, v := range w {
		s += int32(v) * int32(x[i])
	}
	return s
}
