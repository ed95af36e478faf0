package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// q4Ref is the reference of MatMulQ4: the float64 product of the
// dequantized weights with the activations it multiplies, x itself where
// it takes float activations (Q4FloatActs), a's dequantized ones otherwise.
func q4Ref(m qMat, a *Int8Acts, x []float32, n int) (ref, mag []float64) {
	if Q4FloatActs(n) {
		return qRef(m, x, n)
	}
	return qRef(m, dequantActs(a), n)
}

// Shapes of the q4 float-activation GEMM tests: token counts around both
// tiles (6 on AVX-512, 4 on AVX2) and their multiples, rows around the 4-
// and 3-row panels, cols (multiples of the group) of one to many groups,
// past the 1024-column block (two and three blocks, 1056 and 2112 not
// multiples of 128 so only for the smaller groups).
var (
	q4fTestTokens = []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13}
	q4fTestRows   = []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 17}
	q4fTestCols   = []int{32, 64, 96, 128, 256, 384, 896, 1056, 1152, 2112, 2176}
)

// checkQ4Float runs MatMulQ4Float on one shape, writing into a y whose rows
// are ldy = rows+pad apart, and holds every output to the float64 product of
// the dequantized weights with the float activations themselves (within
// checkQClose's float32 rounding bound, or bit-exact on integer data), the
// padding to NaN (untouched), and the assembly to the Go twin.
func checkQ4Float(t *testing.T, r *rand.Rand, level string, group, n, rows, cols, pad int, integers bool) {
	t.Helper()
	m := newQ4(r, rows, cols, group, integers)
	x := randActs16(r, n, cols, integers)
	ref, mag := qRef(m, x, n)
	name := fmt.Sprintf("%s G=%d n=%d %dx%d ldy=%d int=%v", level, group, n, rows, cols, rows+pad, integers)

	checkFloatTwins(t, "MatMulQ4Float", name, n, rows, cols, rows+pad, ref, mag, integers,
		func(y []float32, ldy int) { MatMulQ4Float(y, ldy, x, n, m.w4, m.scale, m.offset, group, rows, cols) },
		func(y []float32, ldy int) {
			matMulQ4FloatGeneric(y, ldy, x, n, m.w4, m.scale, m.offset, group, rows, cols)
		})

	// A row range [lo, hi) writes exactly its outputs.
	lo, hi := rows/3, rows-rows/4
	ng := cols / group
	y := nanSlice(n * rows)
	MatMulQ4Float(y[lo:], rows, x, n, m.w4[lo*cols/2:hi*cols/2], m.scale[lo*ng:hi*ng], m.offset[lo*ng:hi*ng], group, hi-lo, cols)
	checkRange(t, "MatMulQ4Float range "+name, y, ref, mag, n, rows, cols, lo, hi, integers)
}

// TestMatMulQ4Float covers every group size, tile remainder (tokens and
// rows), one to many groups, several column blocks, strided outputs and
// row ranges, on every instruction-set level this machine has (AVX-512,
// AVX2, Go).
func TestMatMulQ4Float(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, level := range isaLevels() {
		restore := level.set()
		t.Logf("level %s: %s", level.name, q4FloatImpl())
		for _, group := range []int{32, 64, 128} {
			for _, integers := range []bool{false, true} {
				for _, n := range q4fTestTokens {
					for _, rows := range q4fTestRows {
						for _, cols := range q4fTestCols {
							if cols%group != 0 || cols > 1000 && (rows > 9 || n%3 != 1) || cols > 300 && group == 32 && !integers && n%2 == 0 {
								continue // the wide shapes on a subset
							}
							checkQ4Float(t, r, level.name, group, n, rows, cols, (n+rows+cols)%3, integers)
						}
					}
				}
			}
		}
		restore()
	}
}

// TestMatMulQ4FloatRowBlocks runs products tall enough (with the L2 block
// shrunk) that the assembly splits them into several row blocks, each with
// leftover rows, and with leftover tokens.
func TestMatMulQ4FloatRowBlocks(t *testing.T) {
	saved := gemmBlockBytes
	gemmBlockBytes = 8 << 10
	defer func() { gemmBlockBytes = saved }()
	r := rand.New(rand.NewPCG(33, 34))
	for _, level := range isaLevels() {
		restore := level.set()
		for _, s := range []struct{ group, n, rows, cols int }{{32, 7, 501, 512}, {64, 13, 103, 1152}, {128, 9, 67, 2176}, {32, 5, 130, 2112}} {
			checkQ4Float(t, r, level.name, s.group, s.n, s.rows, s.cols, 5, false)
			checkQ4Float(t, r, level.name, s.group, s.n, s.rows, s.cols, 0, true)
		}
		restore()
	}
}

// TestMatMulQ4FloatSpecial checks NaN propagation (a float product gives NaN
// where the activations hold one), zero and empty shapes, and the panics.
func TestMatMulQ4FloatSpecial(t *testing.T) {
	for _, level := range isaLevels() {
		restore := level.set()
		const n, rows, cols, group = 6, 4, 64, 32
		w := make([]byte, rows*cols/2)
		for i := range w {
			w[i] = byte(i * 37)
		}
		scale, offset := make([]uint16, rows*cols/group), make([]uint16, rows*cols/group)
		for i := range scale {
			scale[i], offset[i] = 0x3C00, 0x4800 // 1, 8
		}
		x := make([]float32, n*cols)
		x[1*cols+5] = float32(math.NaN())
		y := make([]float32, n*rows)
		MatMulQ4Float(y, rows, x, n, w, scale, offset, group, rows, cols)
		for tk := 0; tk < n; tk++ {
			for r := 0; r < rows; r++ {
				if v := y[tk*rows+r]; (tk == 1) != math.IsNaN(float64(v)) || (tk != 1 && v != 0) {
					t.Fatalf("%s: NaN in token 1: y[%d,%d] = %g", level.name, tk, r, v)
				}
			}
		}
		MatMulQ4Float(nil, rows, nil, 0, w, scale, offset, group, rows, cols) // no tokens
		MatMulQ4Float(nil, 0, x, n, nil, nil, nil, group, 0, cols)            // no rows
		y = nanSlice(n * rows)
		MatMulQ4Float(y, rows, nil, n, nil, nil, nil, group, rows, 0) // no columns: zeros
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: cols = 0: y[%d] = %g", level.name, i, v)
			}
		}
		restore()
	}
	mustPanic(t, "short x", func() {
		MatMulQ4Float(make([]float32, 8), 4, make([]float32, 127), 2, make([]byte, 128), make([]uint16, 8), make([]uint16, 8), 32, 4, 64)
	})
	mustPanic(t, "short w", func() {
		MatMulQ4Float(make([]float32, 8), 4, make([]float32, 128), 2, make([]byte, 127), make([]uint16, 8), make([]uint16, 8), 32, 4, 64)
	})
	mustPanic(t, "short scale", func() {
		MatMulQ4Float(make([]float32, 8), 4, make([]float32, 128), 2, make([]byte, 128), make([]uint16, 7), make([]uint16, 8), 32, 4, 64)
	})
	mustPanic(t, "short offset", func() {
		MatMulQ4Float(make([]float32, 8), 4, make([]float32, 128), 2, make([]byte, 128), make([]uint16, 8), make([]uint16, 7), 32, 4, 64)
	})
	mustPanic(t, "short y", func() {
		MatMulQ4Float(make([]float32, 7), 4, make([]float32, 128), 2, make([]byte, 128), make([]uint16, 8), make([]uint16, 8), 32, 4, 64)
	})
	mustPanic(t, "bad group", func() {
		MatMulQ4Float(make([]float32, 8), 4, make([]float32, 192), 2, make([]byte, 192), make([]uint16, 8), make([]uint16, 8), 64, 4, 96)
	})
}

// FuzzMatMulQ4Float checks random shapes (up to 15 tokens, 40 rows, 2176
// columns, every group, strided outputs) and data against the float64
// product.
func FuzzMatMulQ4Float(f *testing.F) {
	f.Add(uint64(1), uint8(6), uint16(896), uint16(28), uint8(0), uint8(1), false)
	f.Add(uint64(2), uint8(13), uint16(7), uint16(33), uint8(3), uint8(0), true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, rows, groups uint16, pad, g uint8, integers bool) {
		r := rand.New(rand.NewPCG(seed, 99))
		group := 32 << (g % 3)
		cols := group * (1 + int(groups)%(2176/group))
		checkQ4Float(t, r, "default", group, 1+int(n)%15, 1+int(rows)%40, cols, int(pad)%5, integers)
	})
}
