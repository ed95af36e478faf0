package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
)

// Odd shapes on purpose: not multiples of 4 rows, 3 rows, 8 or 16 columns.
var (
	testRows = []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33}
	testCols = []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 100, 257}
)

// u is float32's unit roundoff; a sum of n products computed in any order
// lies within n*u*sum|products| of the exact value (the documented bound).
const u = 1.0 / (1 << 24)

type mats struct {
	w16  []uint16  // fp16 weights
	w32  []float32 // the same weights widened (exact)
	x, y []float32
}

// newMats draws weights N(0, 1) rounded to fp16 and activations N(0, 1); with
// integers set, both are small integers so every float32 sum is exact.
func newMats(r *rand.Rand, n, rows, cols int, integers bool) mats {
	m := mats{w16: make([]uint16, rows*cols), w32: make([]float32, rows*cols),
		x: make([]float32, n*cols), y: make([]float32, n*rows)}
	draw := func() float32 {
		if integers {
			return float32(r.IntN(17) - 8)
		}
		return float32(r.NormFloat64())
	}
	for i := range m.w16 {
		m.w16[i] = half.F32ToF16Scalar(draw())
		m.w32[i] = half.F16ToF32Scalar(m.w16[i])
	}
	for i := range m.x {
		m.x[i] = draw()
	}
	for i := range m.y {
		m.y[i] = float32(math.NaN()) // every output must be written
	}
	return m
}

// refMatMul returns the exact-ish (float64) product and, per output, the sum
// of absolute products that scales the rounding bound.
func refMatMul(x, w []float32, n, rows, cols int) (ref, mag []float64) {
	ref, mag = make([]float64, n*rows), make([]float64, n*rows)
	for t := 0; t < n; t++ {
		for r := 0; r < rows; r++ {
			var s, a float64
			for c := 0; c < cols; c++ {
				p := float64(x[t*cols+c]) * float64(w[r*cols+c])
				s += p
				a += math.Abs(p)
			}
			ref[t*rows+r], mag[t*rows+r] = s, a
		}
	}
	return ref, mag
}

// checkClose fails unless got is within the rounding bound of ref, or equal
// to it when exact is set.
func checkClose(t *testing.T, what string, got []float32, ref, mag []float64, cols int, exact bool) {
	t.Helper()
	for i, g := range got[:len(ref)] {
		d := math.Abs(float64(g) - ref[i])
		tol := float64(cols+16) * u * mag[i]
		if exact {
			tol = 0
		}
		if !(d <= tol) { // also catches NaN (an output never written)
			t.Fatalf("%s: [%d] = %g, want %g (|diff| %g > tol %g)", what, i, g, ref[i], d, tol)
		}
	}
}

func TestMatVec(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, integers := range []bool{false, true} {
		for _, rows := range testRows {
			for _, cols := range testCols {
				m := newMats(r, 1, rows, cols, integers)
				ref, mag := refMatMul(m.x, m.w32, 1, rows, cols)
				name := fmt.Sprintf("%dx%d int=%v", rows, cols, integers)

				MatVecF16(m.y, m.w16, m.x, rows, cols)
				checkClose(t, "MatVecF16 "+name, m.y, ref, mag, cols, integers)
				MatVecF32(m.y, m.w32, m.x, rows, cols)
				checkClose(t, "MatVecF32 "+name, m.y, ref, mag, cols, integers)

				// The pure-Go twins on their own.
				clear(m.y)
				matVecF16Generic(m.y, m.w16, m.x, rows, cols, 0)
				checkClose(t, "matVecF16Generic "+name, m.y, ref, mag, cols, integers)
				clear(m.y)
				matVecF32Generic(m.y, m.w32, m.x, rows, cols, 0)
				checkClose(t, "matVecF32Generic "+name, m.y, ref, mag, cols, integers)
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, integers := range []bool{false, true} {
		for n := 1; n <= 9; n++ {
			for _, rows := range testRows[:8] {
				for _, cols := range testCols {
					m := newMats(r, n, rows, cols, integers)
					ref, mag := refMatMul(m.x, m.w32, n, rows, cols)
					name := fmt.Sprintf("n=%d %dx%d int=%v", n, rows, cols, integers)

					MatMulF16(m.y, m.x, m.w16, n, rows, cols)
					checkClose(t, "MatMulF16 "+name, m.y, ref, mag, cols, integers)
					MatMulF32(m.y, m.x, m.w32, n, rows, cols)
					checkClose(t, "MatMulF32 "+name, m.y, ref, mag, cols, integers)

					clear(m.y)
					matMulF16Generic(m.y, m.x, m.w16, n, rows, cols, 0, rows, 0)
					checkClose(t, "matMulF16Generic "+name, m.y, ref, mag, cols, integers)
					clear(m.y)
					matMulF32Generic(m.y, m.x, m.w32, n, rows, cols, 0, rows, 0)
					checkClose(t, "matMulF32Generic "+name, m.y, ref, mag, cols, integers)
				}
			}
		}
	}
}

// TestMatMulMatchesMatVec checks that the prefill product of one token is
// the decode product, so a prompt and its tokens one by one agree.
func TestMatMulOneTokenIsMatVec(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := newMats(r, 1, 37, 200, false)
	a, b := make([]float32, 37), make([]float32, 37)
	MatVecF16(a, m.w16, m.x, 37, 200)
	MatMulF16(b, m.x, m.w16, 1, 37, 200)
	ref, mag := refMatMul(m.x, m.w32, 1, 37, 200)
	checkClose(t, "MatVecF16", a, ref, mag, 200, false)
	checkClose(t, "MatMulF16", b, ref, mag, 200, false)
}

func TestZeroShapes(t *testing.T) {
	y := []float32{1, 2, 3}
	MatVecF16(y, nil, nil, 3, 0)
	MatMulF32(y[1:], nil, nil, 1, 2, 0)
	if y[0] != 0 || y[1] != 0 || y[2] != 0 {
		t.Fatalf("an empty sum must be 0, got %v", y)
	}
	MatVecF32(nil, nil, make([]float32, 5), 0, 5)
	MatMulF16(nil, nil, make([]uint16, 16), 0, 4, 4)
}

func TestShortBuffersPanic(t *testing.T) {
	w := make([]uint16, 12)
	for name, f := range map[string]func(){
		"MatVecF16 w": func() { MatVecF16(make([]float32, 4), w, make([]float32, 4), 4, 4) },
		"MatVecF16 x": func() { MatVecF16(make([]float32, 3), w, make([]float32, 3), 3, 4) },
		"MatVecF16 y": func() { MatVecF16(make([]float32, 2), w, make([]float32, 4), 3, 4) },
		"MatMulF16 x": func() { MatMulF16(make([]float32, 6), make([]float32, 7), w, 2, 3, 4) },
		"MatMulF32 n": func() { MatMulF32(nil, nil, nil, -1, 3, 4) },
		"Dot":         func() { Dot(make([]float32, 3), make([]float32, 2)) },
		"RoPE odd":    func() { RoPE(make([]float32, 6), 2, 3, make([]float32, 3), make([]float32, 3)) },
		"RowF16":      func() { RowF16(make([]float32, 4), w, 3, 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on a short buffer", name)
				}
			}()
			f()
		}()
	}
}

// TestMatMulBlocks covers the cache blocking of the GEMM drivers: columns
// split into several blocks (wider than the AVX-512 driver's 1024-column
// block, with a ragged tail), several row blocks per call (a tiny block
// budget) with leftover rows in each, token tiles with a remainder, and a
// row range [lo, hi) that starts inside the matrix.
func TestMatMulBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	saved := gemmBlockBytes
	defer func() { gemmBlockBytes = saved }()
	for _, budget := range []int{saved, 4 << 10} {
		gemmBlockBytes = budget
		for _, shape := range []struct{ n, rows, cols int }{{13, 37, 2100}, {7, 10, 1041}, {20, 9, 3000}} {
			for _, integers := range []bool{false, true} {
				n, rows, cols := shape.n, shape.rows, shape.cols
				m := newMats(r, n, rows, cols, integers)
				ref, mag := refMatMul(m.x, m.w32, n, rows, cols)
				name := fmt.Sprintf("budget=%d n=%d %dx%d int=%v", budget, n, rows, cols, integers)
				MatMulF16(m.y, m.x, m.w16, n, rows, cols)
				checkClose(t, "MatMulF16 "+name, m.y, ref, mag, cols, integers)
				MatMulF32(m.y, m.x, m.w32, n, rows, cols)
				checkClose(t, "MatMulF32 "+name, m.y, ref, mag, cols, integers)

				// Rows [lo, hi) only: the others must stay untouched.
				lo, hi := 3, rows-1
				for i := range m.y {
					m.y[i] = -7
				}
				matMulF16Rows(m.y, m.x, m.w16, n, rows, cols, lo, hi)
				for tk := 0; tk < n; tk++ {
					for row := 0; row < rows; row++ {
						i := tk*rows + row
						if row < lo || row >= hi {
							if m.y[i] != -7 {
								t.Fatalf("%s: matMulF16Rows [%d, %d) wrote row %d of token %d", name, lo, hi, row, tk)
							}
							continue
						}
						if d, tol := math.Abs(float64(m.y[i])-ref[i]), float64(cols+16)*u*mag[i]; !(d <= tol) && !(integers && d == 0) {
							t.Fatalf("%s: matMulF16Rows [%d] = %g, want %g", name, i, m.y[i], ref[i])
						}
					}
				}
			}
		}
	}
}
