package kernels

import (
	"sync"

	"github.com/anepack/anepack/half"
)

// Pure-Go twins of the assembly kernels. Each handles columns [k, cols) of
// its rows, so with k = 0 it is the whole kernel and after the assembly it
// adds the leftover columns (it then accumulates into y instead of setting).

// f16Table maps every fp16 bit pattern to its float32 value: a 256 KiB table
// is the fastest portable way to widen fp16 in Go, and it is built on first
// use only (amd64 with F16C never needs it for the matrix kernels).
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	src := make([]uint16, len(t))
	for i := range src {
		src[i] = uint16(i)
	}
	half.F16ToF32(t[:], src)
	return &t
})

// matVecF16Generic adds (k > 0) or sets (k == 0) y[r] += sum_{k<=c<cols}
// w[r*cols+c]*x[c] for r < rows, four independent partial sums per row.
func matVecF16Generic(y []float32, w []uint16, x []float32, rows, cols, k int) {
	tab := f16Table()
	x = x[:cols]
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		var s0, s1, s2, s3 float32
		c := k
		for ; c+4 <= cols; c += 4 {
			s0 += tab[row[c]] * x[c]
			s1 += tab[row[c+1]] * x[c+1]
			s2 += tab[row[c+2]] * x[c+2]
			s3 += tab[row[c+3]] * x[c+3]
		}
		for ; c < cols; c++ {
			s0 += tab[row[c]] * x[c]
		}
		s := (s0 + s1) + (s2 + s3)
		if k == 0 {
			y[r] = s
		} else {
			y[r] += s
		}
	}
}

// matVecF32Generic is matVecF16Generic for float32 weights.
func matVecF32Generic(y []float32, w []float32, x []float32, rows, cols, k int) {
	x = x[:cols]
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		s := dotGeneric(row[k:], x[k:])
		if k == 0 {
			y[r] = s
		} else {
			y[r] += s
		}
	}
}

// matMulF16Generic adds (k > 0) or sets (k == 0) the contribution of columns
// [k, cols) to output rows [lo, hi) of all n tokens. It walks one weight row
// at a time across every token so the row stays in L1.
func matMulF16Generic(y, x []float32, w []uint16, n, rows, cols, lo, hi, k int) {
	tab := f16Table()
	var buf [256]float32 // a widened chunk of the weight row, on the stack
	for r := lo; r < hi; r++ {
		row := w[r*cols : (r+1)*cols]
		for c0 := k; c0 < cols; c0 += len(buf) {
			c1 := min(cols, c0+len(buf))
			wf := buf[:c1-c0]
			for i := range wf {
				wf[i] = tab[row[c0+i]]
			}
			for t := 0; t < n; t++ {
				s := dotGeneric(wf, x[t*cols+c0:t*cols+c1])
				if k == 0 && c0 == 0 {
					y[t*rows+r] = s
				} else {
					y[t*rows+r] += s
				}
			}
		}
	}
}

// matMulF32Generic is matMulF16Generic for float32 weights.
func matMulF32Generic(y, x, w []float32, n, rows, cols, lo, hi, k int) {
	for r := lo; r < hi; r++ {
		row := w[r*cols+k : (r+1)*cols]
		for t := 0; t < n; t++ {
			s := dotGeneric(row, x[t*cols+k:(t+1)*cols])
			if k == 0 {
				y[t*rows+r] = s
			} else {
				y[t*rows+r] += s
			}
		}
	}
}

// dotGeneric returns sum x[i]*y[i] with four partial sums (independent
// chains let the CPU overlap the additions).
func dotGeneric(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// sumGeneric returns the sum of x with four partial sums.
func sumGeneric(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}
