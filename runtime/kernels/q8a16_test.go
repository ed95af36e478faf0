package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randActs16 draws activations like randActs. With integers set every
// block's largest |value| is 16129 = q16Max/2 and the others are integers
// in [-127, 127], so Int16Acts holds exactly 2x with scale 0.5, and with
// weights in [-3, 3] every sum of a GEMV of up to ~2000 columns stays an
// integer below 2^24: exact in float32 whatever the order of the additions.
func randActs16(r *rand.Rand, n, cols int, integers bool) []float32 {
	if !integers {
		return randActs(r, n, cols, false)
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.IntN(255) - 127)
		if i%cols%32 == 0 {
			x[i] = float32(q16Max / 2 * (1 - 2*r.IntN(2)))
		}
	}
	return x
}

// dequantActs16 returns the values the q8 kernels multiply: d*Q per block.
func dequantActs16(a *Int16Acts) []float32 {
	x := make([]float32, a.n*a.cols)
	for t := 0; t < a.n; t++ {
		for c := 0; c < a.cols; c++ {
			x[t*a.cols+c] = a.d[t*a.nb+c/32] * float32(a.q[t*a.cols+c])
		}
	}
	return x
}

// q8Ref is the reference of MatMulQ8: the float64 product of the
// dequantized weights with the activations it multiplies, x itself where
// it takes float activations (Q8FloatActs), a's dequantized ones otherwise.
func q8Ref(m qMat, a *Int16Acts, x []float32, n int) (ref, mag []float64) {
	if Q8FloatActs(n) {
		return qRef(m, x, n)
	}
	return qRef(m, dequantActs16(a), n)
}

// checkQ8 runs every entry point of the q8 kernels on one shape and holds
// each to the float64 product of the dequantized weights and activations:
// within checkQClose's float32 rounding bound, or bit-exact on integer data.
// It also compares the assembly (MatMulQ8Acts, which leaves only leftover
// columns to Go) with the pure-Go twin directly.
func checkQ8(t *testing.T, r *rand.Rand, a *Int16Acts, n, rows, cols int, integers bool) {
	t.Helper()
	m := newQ8(r, rows, cols, integers, 3)
	x := randActs16(r, n, cols, integers)
	a.Quantize(x, n, cols)
	ref, mag := qRef(m, dequantActs16(a), n)
	name := fmt.Sprintf("n=%d %dx%d int=%v", n, rows, cols, integers)

	y := nanSlice(n * rows)
	MatMulQ8(y, x, m.w8, m.scale, n, rows, cols)
	refF, magF := q8Ref(m, a, x, n)
	checkQClose(t, "MatMulQ8 "+name, y, rows, refF, magF, n, rows, cols, integers)
	if n == 1 {
		y = nanSlice(rows)
		MatVecQ8(y, m.w8, m.scale, x, rows, cols)
		checkQClose(t, "MatVecQ8 "+name, y, rows, ref, mag, n, rows, cols, integers)
	}
	fast := nanSlice(n * rows)
	MatMulQ8Acts(fast, rows, a, m.w8, m.scale, rows)
	checkQClose(t, "MatMulQ8Acts "+name, fast, rows, ref, mag, n, rows, cols, integers)
	twin := nanSlice(n * rows)
	matMulQ8Generic(twin, rows, a, m.w8, m.scale, rows, 0)
	checkQClose(t, "matMulQ8Generic "+name, twin, rows, ref, mag, n, rows, cols, integers)
	for i := range fast {
		// Both are within the bound of the exact value, so within twice it
		// of each other (and equal on integer data, checked above).
		if d, tol := math.Abs(float64(fast[i]-twin[i])), 2*float64(cols/8+16)*u*mag[i]; !(d <= tol) {
			t.Fatalf("%s: assembly %g, Go twin %g (|diff| %g > %g)", name, fast[i], twin[i], d, tol)
		}
	}

	// A row range [lo, hi) writes exactly its outputs, into a y strided
	// like the whole product.
	lo, hi := rows/3, rows-rows/4
	y = nanSlice(n * rows)
	MatMulQ8Acts(y[lo:], rows, a, m.w8[lo*cols:hi*cols], m.scale[lo:hi], hi-lo)
	checkRange(t, "MatMulQ8Acts range "+name, y, ref, mag, n, rows, cols, lo, hi, integers)
}

// TestMatMulQ8 covers odd shapes: rows not multiples of the 2-row panels,
// cols not multiples of 32 (a short last block goes to the Go twin), token
// counts around the 4-token tile.
func TestMatMulQ8(t *testing.T) {
	t.Logf("quantized kernels: %s", QuantKernels())
	r := rand.New(rand.NewPCG(11, 12))
	var a Int16Acts
	for _, integers := range []bool{false, true} {
		for _, n := range qTestTokens {
			for _, rows := range qTestRows {
				for _, cols := range q8TestCols {
					checkQ8(t, r, &a, n, rows, cols, integers)
				}
			}
		}
	}
}

// FuzzMatMulQ8 checks random shapes (up to 9 tokens, 40 rows, 1100
// columns) and data against the float64 product.
func FuzzMatMulQ8(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint16(896), uint16(896), false)
	f.Add(uint64(2), uint8(5), uint16(7), uint16(1000), true)
	f.Add(uint64(3), uint8(9), uint16(33), uint16(63), false)
	var a Int16Acts
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, rows, cols uint16, integers bool) {
		r := rand.New(rand.NewPCG(seed, 99))
		checkQ8(t, r, &a, 1+int(n)%9, 1+int(rows)%40, 1+int(cols)%1100, integers)
	})
}

func TestInt16Acts(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 17))
	var a Int16Acts
	for _, cols := range []int{1, 31, 32, 33, 64, 100, 896} {
		x := randActs(r, 3, cols, false)
		a.Quantize(x, 3, cols)
		if a.N() != 3 || a.Cols() != cols {
			t.Fatalf("N, Cols = %d, %d", a.N(), a.Cols())
		}
		xd := dequantActs16(&a)
		for i, v := range x {
			b := i/cols*a.nb + i%cols/32
			// Half a quantization step, plus float32 rounding of x*32258/max.
			if d := math.Abs(float64(xd[i] - v)); d > float64(a.d[b])*(0.5+1e-3) {
				t.Fatalf("cols %d: x[%d] = %g -> %g (step %g)", cols, i, v, xd[i], a.d[b])
			}
			if q := a.q[i]; q < -q16Max || q > q16Max {
				t.Fatalf("cols %d: x[%d] = %g quantized to %d, outside ±%d", cols, i, v, q, q16Max)
			}
		}
	}
	// The block maximum maps to ±32258 and every rounding matches
	// math.RoundToEven of x*32258/max, ties included (max = 32258: x itself).
	x := []float32{q16Max, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 32257.5, -32257.5, 3.49, -q16Max}
	a.Quantize(x, 1, len(x))
	for i, v := range x {
		if want := int16(math.RoundToEven(float64(v))); a.q[i] != want {
			t.Fatalf("x = %g quantized to %d, want %d", v, a.q[i], want)
		}
	}
	// NaN or Inf poisons its block (as it would a float product), not others.
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		x = make([]float32, 64)
		x[3], x[5], x[40] = bad, 1, 1
		a.Quantize(x, 1, 64)
		y := make([]float32, 1)
		MatMulQ8Acts(y, 1, &a, make([]int8, 64), []uint16{0x3C00}, 1)
		if !math.IsNaN(float64(y[0])) || a.d[1] != 1.0/q16Max {
			t.Fatalf("%g in block 0: product %g, block scales %g, %g", bad, y[0], a.d[0], a.d[1])
		}
	}
	// A zero block has scale 0 and quantizes to 0.
	a.Quantize(make([]float32, 40), 1, 40)
	for i, v := range dequantActs16(&a) {
		if v != 0 {
			t.Fatalf("zero input: [%d] = %g", i, v)
		}
	}
}

// TestInt16ActsPlanes checks the int8 planes the SDOT kernels read, for
// every value an Int16Acts can hold: Q = 254*q1 + q2 with both in
// [-127, 127]. (Quantize builds them only where a kernel reads them; split
// runs here on every platform.)
func TestInt16ActsPlanes(t *testing.T) {
	const cols = 2*q16Max + 1 + 31 // every value, then a short last block
	a := Int16Acts{n: 1, cols: cols, nb: (cols + 31) / 32, q: make([]int16, cols)}
	for i := range a.q {
		a.q[i] = int16(i%(2*q16Max+1) - q16Max)
	}
	a.split()
	if len(a.planes) != cols/32*64 {
		t.Fatalf("planes hold %d bytes, want %d", len(a.planes), cols/32*64)
	}
	for i := 0; i < cols/32*32; i++ {
		q1, q2 := a.planes[i/32*64+i%32], a.planes[i/32*64+32+i%32]
		if q1 < -127 || q2 < -127 || 254*int32(q1)+int32(q2) != int32(a.q[i]) {
			t.Fatalf("Q = %d split into q1 = %d, q2 = %d", a.q[i], q1, q2)
		}
	}
}
