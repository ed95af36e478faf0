package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// Odd shapes for the quantized kernels: rows not multiples of the 2-row
// panels, cols not multiples of 32 (q8) or of the 64-column step (q4).
var (
	qTestRows   = []int{1, 2, 3, 4, 5, 7, 9, 17}
	q8TestCols  = []int{1, 7, 31, 32, 33, 64, 95, 100, 257, 896}
	q4TestCols  = map[int][]int{32: {32, 64, 96, 160, 896}, 64: {64, 128, 192, 896}, 128: {128, 256, 384, 896}}
	qTestTokens = []int{1, 2, 3, 4, 5, 7, 9}
)

// qMat is a quantized weight matrix with its dequantized values.
type qMat struct {
	rows, cols, group int
	w8                []int8
	w4                []byte
	scale, offset     []uint16
	deq               []float32
}

// newQ8 quantizes random weights; with integers set the scales are 1 and
// the data integers in [-wmax, wmax], so every product is exact.
func newQ8(r *rand.Rand, rows, cols int, integers bool, wmax int) qMat {
	m := qMat{rows: rows, cols: cols, w8: make([]int8, rows*cols), scale: make([]uint16, rows), deq: make([]float32, rows*cols)}
	if integers {
		for i := range m.w8 {
			m.w8[i] = int8(r.IntN(2*wmax+1) - wmax)
		}
		for i := range m.scale {
			m.scale[i] = half.F32ToF16Scalar(1)
		}
	} else if err := quant.QuantizeQ8(m.w8, m.scale, randW(r, rows, cols), rows, cols); err != nil {
		panic(err)
	}
	if err := quant.DequantizeQ8(m.deq, m.w8, m.scale, rows, cols); err != nil {
		panic(err)
	}
	return m
}

// newQ4 is newQ8 for q4; with integers set the scales are 1 and the
// offsets integers.
func newQ4(r *rand.Rand, rows, cols, group int, integers bool) qMat {
	ng := rows * cols / group
	m := qMat{rows: rows, cols: cols, group: group, w4: make([]byte, rows*cols/2),
		scale: make([]uint16, ng), offset: make([]uint16, ng), deq: make([]float32, rows*cols)}
	if integers {
		for i := range m.w4 {
			m.w4[i] = byte(r.IntN(256))
		}
		for i := range m.scale {
			m.scale[i] = half.F32ToF16Scalar(1)
			m.offset[i] = half.F32ToF16Scalar(float32(r.IntN(16)))
		}
	} else if err := quant.QuantizeQ4(m.w4, m.scale, m.offset, randW(r, rows, cols), rows, cols, group); err != nil {
		panic(err)
	}
	if err := quant.DequantizeQ4(m.deq, m.w4, m.scale, m.offset, rows, cols, group); err != nil {
		panic(err)
	}
	return m
}

// randW draws weights ~ N(0, 1/cols).
func randW(r *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() / math.Sqrt(float64(cols)))
	}
	return w
}

// randActs draws n activation vectors like hidden states: N(0, 1) with one
// value in 100 an outlier 20-100x larger. With integers set every block's
// largest |value| is 127 and all are integers, so quantization is exact.
func randActs(r *rand.Rand, n, cols int, integers bool) []float32 {
	x := make([]float32, n*cols)
	for i := range x {
		if integers {
			x[i] = float32(r.IntN(255) - 127)
			if i%cols%32 == 0 {
				x[i] = 127
			}
			continue
		}
		x[i] = float32(r.NormFloat64())
		if r.IntN(100) == 0 {
			x[i] *= float32(20 + r.IntN(80))
		}
	}
	return x
}

// dequantActs returns the values the kernels multiply: d*q per block.
func dequantActs(a *Int8Acts) []float32 {
	x := make([]float32, a.n*a.cols)
	for t := 0; t < a.n; t++ {
		for c := 0; c < a.cols; c++ {
			x[t*a.cols+c] = a.d[t*a.nb+c/32] * float32(a.q[t*a.cols+c])
		}
	}
	return x
}

// qRef returns the float64 product of the dequantized weights and
// activations and, per output, the magnitude that scales its float32
// rounding: sum |x| * |scale| * (|q| + |offset|) (the kernels form q*x and
// offset*x separately, so both count).
func qRef(m qMat, x []float32, n int) (ref, mag []float64) {
	ref, mag = make([]float64, n*m.rows), make([]float64, n*m.rows)
	for t := 0; t < n; t++ {
		for r := 0; r < m.rows; r++ {
			var s, a float64
			for c := 0; c < m.cols; c++ {
				xv := float64(x[t*m.cols+c])
				s += xv * float64(m.deq[r*m.cols+c])
				if m.w4 != nil {
					g := (r*m.cols + c) / m.group
					q := float64(m.w4[(r*m.cols+c)/2] >> (4 * (c & 1)) & 15)
					a += math.Abs(xv) * math.Abs(float64(half.F16ToF32Scalar(m.scale[g]))) * (q + math.Abs(float64(half.F16ToF32Scalar(m.offset[g]))))
				} else {
					a += math.Abs(xv * float64(m.deq[r*m.cols+c]))
				}
			}
			ref[t*m.rows+r], mag[t*m.rows+r] = s, a
		}
	}
	return ref, mag
}

// checkQ fails unless got[t*ldy+r] is within the float32 rounding bound of
// ref, or equal to it when exact is set. The bound allows one rounding per
// 8 columns (the lane sums run over cols/8 steps at most) and a few more for
// scaling and the final reduction.
func checkQClose(t *testing.T, what string, got []float32, ldy int, ref, mag []float64, n, rows, cols int, exact bool) {
	t.Helper()
	for tk := 0; tk < n; tk++ {
		for r := 0; r < rows; r++ {
			g, want := got[tk*ldy+r], ref[tk*rows+r]
			d := math.Abs(float64(g) - want)
			tol := float64(cols/8+16) * u * mag[tk*rows+r]
			if exact {
				tol = 0
			}
			if !(d <= tol) {
				t.Fatalf("%s: y[%d,%d] = %g, want %g (|diff| %g > tol %g)", what, tk, r, g, want, d, tol)
			}
		}
	}
}

func nanSlice(n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = float32(math.NaN())
	}
	return y
}

func TestMatMulQ4(t *testing.T) {
	t.Logf("quantized kernels: %s", QuantKernels())
	r := rand.New(rand.NewPCG(13, 14))
	var a Int8Acts
	for _, integers := range []bool{false, true} {
		for _, group := range []int{32, 64, 128} {
			for _, n := range qTestTokens {
				for _, rows := range qTestRows {
					for _, cols := range q4TestCols[group] {
						m := newQ4(r, rows, cols, group, integers)
						x := randActs(r, n, cols, integers)
						a.Quantize(x, n, cols)
						ref, mag := qRef(m, dequantActs(&a), n)
						name := fmt.Sprintf("G=%d n=%d %dx%d int=%v", group, n, rows, cols, integers)

						y := nanSlice(n * rows)
						MatMulQ4(y, x, m.w4, m.scale, m.offset, group, n, rows, cols)
						refF, magF := q4Ref(m, &a, x, n)
						checkQClose(t, "MatMulQ4 "+name, y, rows, refF, magF, n, rows, cols, integers)
						if n == 1 {
							y = nanSlice(rows)
							MatVecQ4(y, m.w4, m.scale, m.offset, group, x, rows, cols)
							checkQClose(t, "MatVecQ4 "+name, y, rows, ref, mag, n, rows, cols, integers)
						}
						y = nanSlice(n * rows)
						matMulQ4Generic(y, rows, &a, m.w4, m.scale, m.offset, group, rows, 0)
						checkQClose(t, "matMulQ4Generic "+name, y, rows, ref, mag, n, rows, cols, integers)

						lo, hi := rows/3, rows-rows/4
						ng := cols / group
						y = nanSlice(n * rows)
						MatMulQ4Acts(y[lo:], rows, &a, m.w4[lo*cols/2:hi*cols/2], m.scale[lo*ng:hi*ng], m.offset[lo*ng:hi*ng], group, hi-lo)
						checkRange(t, "MatMulQ4Acts range "+name, y, ref, mag, n, rows, cols, lo, hi, integers)
					}
				}
			}
		}
	}
}

// checkRange checks outputs of rows [lo, hi) and that no other was written.
func checkRange(t *testing.T, what string, y []float32, ref, mag []float64, n, rows, cols, lo, hi int, exact bool) {
	t.Helper()
	for tk := 0; tk < n; tk++ {
		for r := 0; r < rows; r++ {
			v := y[tk*rows+r]
			if r < lo || r >= hi {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s: y[%d,%d] outside rows [%d,%d) written", what, tk, r, lo, hi)
				}
				continue
			}
			d := math.Abs(float64(v) - ref[tk*rows+r])
			tol := float64(cols/8+16) * u * mag[tk*rows+r]
			if exact {
				tol = 0
			}
			if !(d <= tol) {
				t.Fatalf("%s: y[%d,%d] = %g, want %g (|diff| %g > %g)", what, tk, r, v, ref[tk*rows+r], d, tol)
			}
		}
	}
}

func TestInt8Acts(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var a Int8Acts
	for _, cols := range []int{1, 31, 32, 33, 64, 100, 896} {
		x := randActs(r, 3, cols, false)
		a.Quantize(x, 3, cols)
		if a.N() != 3 || a.Cols() != cols {
			t.Fatalf("N, Cols = %d, %d", a.N(), a.Cols())
		}
		xd := dequantActs(&a)
		for i, v := range x {
			b := i/cols*a.nb + i%cols/32
			// Half a quantization step, plus float32 rounding of x*127/max.
			if d := math.Abs(float64(xd[i] - v)); d > float64(a.d[b])*(0.5+1e-5) {
				t.Fatalf("cols %d: x[%d] = %g -> %g (step %g)", cols, i, v, xd[i], a.d[b])
			}
		}
	}
	// Every rounding matches math.RoundToEven of x*127/max, ties included.
	x := []float32{127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -126.5, 3.49}
	a.Quantize(x, 1, len(x))
	for i, v := range x {
		if want := int8(math.RoundToEven(float64(v))); a.q[i] != want {
			t.Fatalf("x = %g quantized to %d, want %d", v, a.q[i], want)
		}
	}
	// NaN poisons its block (as it would a float product), not others.
	x = make([]float32, 64)
	x[3] = float32(math.NaN())
	x[40] = 1
	a.Quantize(x, 1, 64)
	if !math.IsNaN(float64(a.d[0])) || a.d[1] != 1.0/127 {
		t.Fatalf("NaN block scales %g, %g", a.d[0], a.d[1])
	}
	// A zero block has scale 0 and quantizes to 0.
	a.Quantize(make([]float32, 40), 1, 40)
	for i, v := range dequantActs(&a) {
		if v != 0 {
			t.Fatalf("zero input: [%d] = %g", i, v)
		}
	}
}

func TestQuantizedPanics(t *testing.T) {
	var a Int8Acts
	a.Quantize(make([]float32, 64), 1, 64)
	var a16 Int16Acts
	a16.Quantize(make([]float32, 64), 1, 64)
	mustPanic(t, "short w q8", func() { MatMulQ8Acts(make([]float32, 2), 2, &a16, make([]int8, 127), make([]uint16, 2), 2) })
	mustPanic(t, "short scale q8", func() { MatMulQ8Acts(make([]float32, 2), 2, &a16, make([]int8, 128), make([]uint16, 1), 2) })
	mustPanic(t, "short y", func() { MatMulQ8Acts(make([]float32, 1), 2, &a16, make([]int8, 128), make([]uint16, 2), 2) })
	mustPanic(t, "short x q16", func() { a16.Quantize(make([]float32, 63), 1, 64) })
	mustPanic(t, "short w q4", func() {
		MatMulQ4Acts(make([]float32, 2), 2, &a, make([]byte, 63), make([]uint16, 4), make([]uint16, 4), 32, 2)
	})
	mustPanic(t, "short offset q4", func() {
		MatMulQ4Acts(make([]float32, 2), 2, &a, make([]byte, 64), make([]uint16, 4), make([]uint16, 3), 32, 2)
	})
	mustPanic(t, "bad group", func() {
		MatMulQ4Acts(make([]float32, 2), 2, &a, make([]byte, 64), make([]uint16, 4), make([]uint16, 4), 48, 2)
	})
	mustPanic(t, "short x", func() { MatVecQ8(make([]float32, 2), make([]int8, 128), make([]uint16, 2), make([]float32, 63), 2, 64) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}

// TestQuantRowBlocks runs GEMMs tall enough that the assembly splits them
// into several L2 row blocks, each with leftover tokens and rows.
func TestQuantRowBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var a Int8Acts
	const n, rows, cols = 7, 501, 512
	x := randActs(r, n, cols, false)
	a.Quantize(x, n, cols)
	xd := dequantActs(&a)
	var a16 Int16Acts
	a16.Quantize(x, n, cols)
	m8 := newQ8(r, rows, cols, false, 0)
	ref, mag := q8Ref(m8, &a16, x, n)
	y := nanSlice(n * rows)
	MatMulQ8(y, x, m8.w8, m8.scale, n, rows, cols)
	checkQClose(t, "MatMulQ8 501x512", y, rows, ref, mag, n, rows, cols, false)
	for _, group := range []int{32, 64, 128} {
		m4 := newQ4(r, rows, cols, group, false)
		ref, mag := qRef(m4, xd, n)
		if Q4FloatActs(n) {
			ref, mag = qRef(m4, x, n)
		}
		y := nanSlice(n * rows)
		MatMulQ4(y, x, m4.w4, m4.scale, m4.offset, group, n, rows, cols)
		checkQClose(t, fmt.Sprintf("MatMulQ4 G=%d 501x512", group), y, rows, ref, mag, n, rows, cols, false)
	}
}
