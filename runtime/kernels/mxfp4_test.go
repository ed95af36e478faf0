package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/quant"
)

// mxMat is a random mxfp4 matrix and its weights as quant dequantizes them.
type mxMat struct {
	rows, cols int
	w, e       []byte
	deq        []float32
}

// newMX makes a rows x cols mxfp4 matrix with every code byte possible and scales around 1
// (exact mode: 2^-1 to 2^3, so that with integer activations every product and sum is exact in
// float32), or spread over a wide range.
func newMX(r *rand.Rand, rows, cols int, exact bool) mxMat {
	m := mxMat{rows: rows, cols: cols, w: make([]byte, rows*cols/2), e: make([]byte, rows*cols/32), deq: make([]float32, rows*cols)}
	for i := range m.w {
		m.w[i] = byte(r.IntN(256))
	}
	for i := range m.e {
		if exact {
			m.e[i] = byte(126 + r.IntN(5))
		} else {
			m.e[i] = byte(100 + r.IntN(50))
		}
	}
	if err := quant.DequantizeMXFP4(m.deq, m.w, m.e, rows, cols); err != nil {
		panic(err)
	}
	return m
}

// mxRef returns the float64 product of m's weights with n tokens of x, and the sum of the
// products' magnitudes (the scale of the rounding bound).
func mxRef(m mxMat, x []float32, n int) (ref, mag []float64) {
	ref, mag = make([]float64, n*m.rows), make([]float64, n*m.rows)
	for t := 0; t < n; t++ {
		for r := 0; r < m.rows; r++ {
			var s, a float64
			for c := 0; c < m.cols; c++ {
				p := float64(m.deq[r*m.cols+c]) * float64(x[t*m.cols+c])
				s += p
				a += math.Abs(p)
			}
			ref[t*m.rows+r], mag[t*m.rows+r] = s, a
		}
	}
	return ref, mag
}

// TestDequantMXFP4: every level's dequantization is quant.DequantizeRowMXFP4's, bit for bit,
// on every code byte and every scale: subnormal weights (scale code 0), infinities (the largest
// scales), -0 (code 8) and NaN (scale code 255) included.
func TestDequantMXFP4(t *testing.T) {
	const blocks = 256
	w, e := make([]byte, blocks*16), make([]byte, blocks)
	for i := range w {
		w[i] = byte(i)
	}
	for i := range e {
		e[i] = byte(i * 7) // every scale code (7 and 256 are coprime)
	}
	want := make([]float32, blocks*32)
	quant.DequantizeRowMXFP4(want, w, e)
	for _, level := range isaLevels() {
		restore := level.set()
		for _, nb := range []int{1, 2, 3, 17, blocks} {
			got := nanSlice(nb*32 + 1)
			dequantMXFP4(got[:nb*32], w, e)
			for i, v := range got[:nb*32] {
				if math.Float32bits(v) != math.Float32bits(want[i]) && !(v != v && want[i] != want[i]) {
					t.Fatalf("%s (%s), %d blocks: weight %d (code byte %#x, scale %d) = %g (%#x), want %g (%#x)",
						level.name, mxfp4Impl(), nb, i, w[i/2], e[i/32], v, math.Float32bits(v), want[i], math.Float32bits(want[i]))
				}
			}
			if !math.IsNaN(float64(got[nb*32])) {
				t.Fatalf("%s, %d blocks: wrote past the end", level.name, nb)
			}
		}
		restore()
	}
}

// TestMatVecMXFP4 holds the GEMV of every level to the float64 product of the dequantized
// weights (within the float32 rounding bound, or exactly on data whose sums are exact in
// float32) and the assembly to the Go twin, on one to many blocks (2880 columns: gpt-oss's
// hidden size).
func TestMatVecMXFP4(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, level := range isaLevels() {
		restore := level.set()
		t.Logf("level %s: %s", level.name, mxfp4Impl())
		for _, exact := range []bool{false, true} {
			for _, rows := range []int{1, 2, 3, 7, 17} {
				for _, cols := range []int{32, 64, 96, 1056, 2880} {
					m := newMX(r, rows, cols, exact)
					x := randActs(r, 1, cols, exact)
					ref, mag := mxRef(m, x, 1)
					name := fmt.Sprintf("%s %dx%d exact=%v", level.name, rows, cols, exact)
					y := nanSlice(rows + 1)
					MatVecMXFP4(y[:rows], m.w, m.e, x, rows, cols)
					if !math.IsNaN(float64(y[rows])) {
						t.Fatalf("%s: wrote past y", name)
					}
					checkQClose(t, "MatVecMXFP4 "+name, y, rows, ref, mag, 1, rows, cols, exact)
					twin := make([]float32, rows)
					matVecMXFP4Generic(twin, m.w, m.e, x, rows, cols)
					checkQClose(t, "matVecMXFP4Generic "+name, twin, rows, ref, mag, 1, rows, cols, exact)
					for i := range twin {
						if d, tol := math.Abs(float64(y[i]-twin[i])), 2*float64(cols/8+16)*u*mag[i]; !(d <= tol) {
							t.Fatalf("%s: row %d: assembly %g, Go twin %g (|diff| %g > %g)", name, i, y[i], twin[i], d, tol)
						}
					}
				}
			}
		}
		restore()
	}
}

// TestMatMulMXFP4 covers the batched product on every level: one token (the GEMV), several
// (dequantized panels times the float32 GEMM), more rows than one panel holds, strided
// outputs and row ranges.
func TestMatMulMXFP4(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, level := range isaLevels() {
		restore := level.set()
		for _, exact := range []bool{false, true} {
			for _, n := range []int{1, 2, 3, 5, 8} {
				for _, shape := range [][2]int{{1, 32}, {5, 64}, {9, 2880}, {700, 32}} {
					rows, cols := shape[0], shape[1]
					m := newMX(r, rows, cols, exact)
					x := randActs(r, n, cols, exact)
					ref, mag := mxRef(m, x, n)
					name := fmt.Sprintf("%s n=%d %dx%d exact=%v", level.name, n, rows, cols, exact)
					checkFloatTwins(t, "MatMulMXFP4", name, n, rows, cols, rows+2, ref, mag, exact,
						func(y []float32, ldy int) { MatMulMXFP4(y, ldy, x, n, m.w, m.e, rows, cols) },
						func(y []float32, ldy int) { mxMatMulTwin(y, ldy, x, n, m, 0, rows) })
					// A row range [lo, hi) writes exactly its outputs.
					lo, hi := rows/3, rows-rows/4
					nb := cols / 32
					y := nanSlice(n * rows)
					MatMulMXFP4(y[lo:], rows, x, n, m.w[lo*cols/2:hi*cols/2], m.e[lo*nb:hi*nb], hi-lo, cols)
					checkRange(t, "MatMulMXFP4 range "+name, y, ref, mag, n, rows, cols, lo, hi, exact)
				}
			}
		}
		restore()
	}
}

// mxMatMulTwin is the Go reference of MatMulMXFP4: each token through the Go GEMV.
func mxMatMulTwin(y []float32, ldy int, x []float32, n int, m mxMat, lo, hi int) {
	nb := m.cols / 32
	for t := 0; t < n; t++ {
		matVecMXFP4Generic(y[t*ldy:t*ldy+hi-lo], m.w[lo*m.cols/2:hi*m.cols/2], m.e[lo*nb:hi*nb], x[t*m.cols:(t+1)*m.cols], hi-lo, m.cols)
	}
}

// TestMXFP4Panics: inconsistent lengths are programming errors, reported by the kernel's name
// and the argument.
func TestMXFP4Panics(t *testing.T) {
	w, e, x, y := make([]byte, 32), make([]byte, 2), make([]float32, 64), make([]float32, 2)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { MatVecMXFP4(y, w, e, x, 2, 48) }, "cols 48 is not a positive multiple of 32"},
		{func() { MatVecMXFP4(y, w[:31], e, x, 2, 32) }, "w has 31 bytes"},
		{func() { MatVecMXFP4(y, w, e[:1], x, 2, 32) }, "e has 1 scales"},
		{func() { MatMulMXFP4(y, 2, x[:40], 2, w, e, 1, 32) }, "x has 40 values"},
		{func() { MatVecMXFP4(y[:1], w, e, x, 2, 32) }, "y has 1 values"},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, c.want) || !strings.Contains(msg, "MXFP4") {
					t.Errorf("panic %q, want one naming the kernel and %q", msg, c.want)
				}
			}()
			c.f()
		}()
	}
}
