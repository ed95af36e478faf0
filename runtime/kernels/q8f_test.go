package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Shapes of the q8 float-activation GEMM tests: token counts around both
// tiles (6 on AVX-512, 4 on AVX2) and their multiples, rows around the 4-
// and 3-row panels, cols around the 16- and 8-column steps (the rest goes
// to the Go twin) and past the 1024-column block (two and three blocks).
var (
	q8fTestTokens = []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13}
	q8fTestRows   = []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 17}
	q8fTestCols   = []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257, 896, 1040, 2072}
)

// checkQ8Float runs MatMulQ8Float on one shape, writing into a y whose rows
// are ldy = rows+pad apart, and holds every output to the float64 product of
// the dequantized weights with the float activations themselves (within
// checkQClose's float32 rounding bound, or bit-exact on integer data), the
// padding to NaN (untouched), and the assembly (which leaves only leftover
// columns to Go) to the Go twin.
func checkQ8Float(t *testing.T, r *rand.Rand, level string, n, rows, cols, pad int, integers bool) {
	t.Helper()
	m := newQ8(r, rows, cols, integers, 3)
	x := randActs16(r, n, cols, integers)
	ref, mag := qRef(m, x, n)
	name := fmt.Sprintf("%s n=%d %dx%d ldy=%d int=%v", level, n, rows, cols, rows+pad, integers)

	checkFloatTwins(t, "MatMulQ8Float", name, n, rows, cols, rows+pad, ref, mag, integers,
		func(y []float32, ldy int) { MatMulQ8Float(y, ldy, x, n, m.w8, m.scale, rows, cols) },
		func(y []float32, ldy int) { matMulQ8FloatGeneric(y, ldy, x, n, m.w8, m.scale, rows, cols, 0) })

	// A row range [lo, hi) writes exactly its outputs.
	lo, hi := rows/3, rows-rows/4
	y := nanSlice(n * rows)
	MatMulQ8Float(y[lo:], rows, x, n, m.w8[lo*cols:hi*cols], m.scale[lo:hi], hi-lo, cols)
	checkRange(t, "MatMulQ8Float range "+name, y, ref, mag, n, rows, cols, lo, hi, integers)
}

// TestMatMulQ8Float covers every tile remainder (tokens and rows), column
// leftovers, several column blocks, strided outputs and row ranges, on
// every instruction-set level this machine has (AVX-512, AVX2, Go).
func TestMatMulQ8Float(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, level := range isaLevels() {
		restore := level.set()
		t.Logf("level %s: %s", level.name, q8FloatImpl())
		for _, integers := range []bool{false, true} {
			for _, n := range q8fTestTokens {
				for _, rows := range q8fTestRows {
					for _, cols := range q8fTestCols {
						if cols > 1000 && (rows > 9 || n%3 != 1) {
							continue // the wide shapes on a subset
						}
						checkQ8Float(t, r, level.name, n, rows, cols, (n+rows+cols)%3, integers)
					}
				}
			}
		}
		restore()
	}
}

// TestMatMulQ8FloatRowBlocks runs products tall enough (with the L2 block
// shrunk) that the assembly splits them into several row blocks, each with
// leftover rows, and with leftover tokens.
func TestMatMulQ8FloatRowBlocks(t *testing.T) {
	saved := gemmBlockBytes
	gemmBlockBytes = 8 << 10
	defer func() { gemmBlockBytes = saved }()
	r := rand.New(rand.NewPCG(23, 24))
	for _, level := range isaLevels() {
		restore := level.set()
		for _, s := range []struct{ n, rows, cols int }{{7, 501, 512}, {13, 103, 1100}, {9, 67, 2100}} {
			checkQ8Float(t, r, level.name, s.n, s.rows, s.cols, 5, false)
			checkQ8Float(t, r, level.name, s.n, s.rows, s.cols, 0, true)
		}
		restore()
	}
}

// TestMatMulQ8FloatSpecial checks NaN and Inf propagation (a float product
// gives NaN/Inf where the activations hold them) and zero and empty shapes.
func TestMatMulQ8FloatSpecial(t *testing.T) {
	for _, level := range isaLevels() {
		restore := level.set()
		const n, rows, cols = 6, 4, 48
		w := make([]int8, rows*cols)
		for i := range w {
			w[i] = int8(i%7 - 3)
		}
		scale := []uint16{0x3C00, 0x3C00, 0x3C00, 0x3C00}
		x := make([]float32, n*cols)
		x[1*cols+5] = float32(math.NaN())
		y := make([]float32, n*rows)
		MatMulQ8Float(y, rows, x, n, w, scale, rows, cols)
		for tk := 0; tk < n; tk++ {
			for r := 0; r < rows; r++ {
				if v := y[tk*rows+r]; (tk == 1) != math.IsNaN(float64(v)) || (tk != 1 && v != 0) {
					t.Fatalf("%s: NaN in token 1: y[%d,%d] = %g", level.name, tk, r, v)
				}
			}
		}
		MatMulQ8Float(nil, rows, nil, 0, w, scale, rows, cols) // no tokens
		MatMulQ8Float(nil, 0, x, n, nil, nil, 0, cols)         // no rows
		y = nanSlice(n * rows)
		MatMulQ8Float(y, rows, nil, n, nil, scale, rows, 0) // no columns: zeros
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: cols = 0: y[%d] = %g", level.name, i, v)
			}
		}
		restore()
	}
	mustPanic(t, "short x", func() {
		MatMulQ8Float(make([]float32, 8), 4, make([]float32, 9), 2, make([]int8, 20), make([]uint16, 4), 4, 5)
	})
	mustPanic(t, "short w", func() {
		MatMulQ8Float(make([]float32, 8), 4, make([]float32, 10), 2, make([]int8, 19), make([]uint16, 4), 4, 5)
	})
	mustPanic(t, "short scale", func() {
		MatMulQ8Float(make([]float32, 8), 4, make([]float32, 10), 2, make([]int8, 20), make([]uint16, 3), 4, 5)
	})
	mustPanic(t, "short y", func() {
		MatMulQ8Float(make([]float32, 7), 4, make([]float32, 10), 2, make([]int8, 20), make([]uint16, 4), 4, 5)
	})
}

// FuzzMatMulQ8Float checks random shapes (up to 15 tokens, 40 rows, 2200
// columns, strided outputs) and data against the float64 product.
func FuzzMatMulQ8Float(f *testing.F) {
	f.Add(uint64(1), uint8(6), uint16(896), uint16(896), uint8(0), false)
	f.Add(uint64(2), uint8(13), uint16(7), uint16(1040), uint8(3), true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, rows, cols uint16, pad uint8, integers bool) {
		r := rand.New(rand.NewPCG(seed, 98))
		checkQ8Float(t, r, "default", 1+int(n)%15, 1+int(rows)%40, 1+int(cols)%2200, int(pad)%5, integers)
	})
}

// checkFloatTwins runs a float-activation GEMM (fast, the exported kernel: assembly where there
// is some) and its Go twin, each into a NaN-filled y whose n rows of `rows` outputs are ldy
// apart. It checks that neither wrote the padding between rows, holds both to the float64
// reference (checkQClose) and the assembly to the Go twin within its rounding bound.
func checkFloatTwins(t *testing.T, kernel, name string, n, rows, cols, ldy int, ref, mag []float64, integers bool, fast, twin func(y []float32, ldy int)) {
	t.Helper()
	strided := func(y []float32) []float32 { // y[t*ldy+r] -> [t*rows+r], checking the padding
		out := make([]float32, n*rows)
		for tk := 0; tk < n; tk++ {
			copy(out[tk*rows:], y[tk*ldy:tk*ldy+rows])
			for i := tk*ldy + rows; i < min(len(y), (tk+1)*ldy); i++ {
				if !math.IsNaN(float64(y[i])) {
					t.Fatalf("%s: padding y[%d] written", name, i)
				}
			}
		}
		return out
	}
	y := nanSlice((n-1)*ldy + rows)
	fast(y, ldy)
	fastC := strided(y)
	checkQClose(t, kernel+" "+name, fastC, rows, ref, mag, n, rows, cols, integers)
	y = nanSlice((n-1)*ldy + rows)
	twin(y, ldy)
	twinC := strided(y)
	checkQClose(t, kernel+" Go twin "+name, twinC, rows, ref, mag, n, rows, cols, integers)
	for i := range fastC {
		if d, tol := math.Abs(float64(fastC[i]-twinC[i])), 2*float64(cols/8+16)*u*mag[i]; !(d <= tol) {
			t.Fatalf("%s: assembly %g, Go twin %g (|diff| %g > %g)", name, fastC[i], twinC[i], d, tol)
		}
	}
}
