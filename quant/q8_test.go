package quant

import (
	"github.com/anepack/anepack/dtype"

	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/half"
)

// randWeights draws rows x cols weights ~ N(0, 1/cols) with a heavy tail
// (one in 64 is 8x larger), the shape of trained linear layers.
func randWeights(r *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	sd := 1 / math.Sqrt(float64(cols))
	for i := range w {
		v := r.NormFloat64() * sd
		if r.IntN(64) == 0 {
			v *= 8
		}
		w[i] = float32(v)
	}
	return w
}

func TestQ8RoundTripBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, shape := range [][2]int{{1, 1}, {1, 7}, {3, 33}, {17, 896}, {5, 4864}} {
		rows, cols := shape[0], shape[1]
		w := randWeights(r, rows, cols)
		data, scale := make([]int8, rows*cols), make([]uint16, rows)
		if err := QuantizeQ8(data, scale, w, rows, cols); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, rows*cols)
		if err := DequantizeQ8(back, data, scale, rows, cols); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			row := i / cols
			s := float64(half.F16ToF32Scalar(scale[row]))
			if data[i] == -128 {
				t.Fatalf("%dx%d: q = -128 at %d", rows, cols, i)
			}
			// Half a step, plus what rounding the scale to fp16 can push the
			// row's largest value past level 127 (127 * 2^-11 steps).
			if d := math.Abs(float64(back[i]) - float64(w[i])); d > s*(0.5+127.0/2048) {
				t.Fatalf("%dx%d: [%d] %g -> %g (|diff| %g > %g)", rows, cols, i, w[i], back[i], d, s/2)
			}
		}
	}
}

func TestQ8ExactOnGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	const rows, cols = 9, 77
	w := make([]float32, rows*cols)
	for row := 0; row < rows; row++ {
		s := half.F16ToF32Scalar(half.F32ToF16Scalar(float32(r.Float64() * 0.01)))
		for c := 0; c < cols; c++ {
			w[row*cols+c] = s * float32(r.IntN(255)-127)
		}
		w[row*cols+r.IntN(cols)] = -127 * s // the row's max |w| is 127 steps
	}
	data, scale := make([]int8, rows*cols), make([]uint16, rows)
	if err := QuantizeQ8(data, scale, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, rows*cols)
	if err := DequantizeQ8(back, data, scale, rows, cols); err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if back[i] != w[i] {
			t.Fatalf("[%d] %g -> %g, want exact", i, w[i], back[i])
		}
	}
}

func TestQ8ZeroRowAndErrors(t *testing.T) {
	q := make([]int8, 4)
	s, err := QuantizeRowQ8(q, make([]float32, 4))
	if err != nil || s != 0 || q[0] != 0 {
		t.Fatalf("zero row: scale %x err %v q %v", s, err, q)
	}
	if _, err := QuantizeRowQ8(q, []float32{1, float32(math.NaN()), 0, 0}); err == nil {
		t.Fatal("NaN accepted")
	}
	if _, err := QuantizeRowQ8(q, []float32{1e9, 0, 0, 0}); err == nil {
		t.Fatal("a scale overflowing fp16 accepted")
	}
	if err := QuantizeQ8(make([]int8, 5), make([]uint16, 2), make([]float32, 6), 2, 3); err == nil {
		t.Fatal("short data accepted")
	}
	if err := QuantizeQ8(make([]int8, 6), make([]uint16, 1), make([]float32, 6), 2, 3); err == nil {
		t.Fatal("short scale accepted")
	}
	if err := DequantizeQ8(make([]float32, 5), make([]int8, 6), make([]uint16, 2), 2, 3); err == nil {
		t.Fatal("short output accepted")
	}
	if d, s := Q8Sizes(3, 5); d != 15 || s != 6 {
		t.Fatalf("Q8Sizes(3, 5) = %d, %d", d, s)
	}
}

// rawRows encodes w as little-endian bytes of dt (rounding to dt), and
// returns them with the values they hold.
func rawRows(w []float32, dt dtype.DType) ([]byte, []float32) {
	b := make([]byte, len(w)*dt.Size())
	held := make([]float32, len(w))
	for i, v := range w {
		switch dt {
		case dtype.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			held[i] = v
		case dtype.F16:
			h := half.F32ToF16Scalar(v)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			held[i] = half.F16ToF32Scalar(h)
		case dtype.BF16:
			h := half.F32ToBF16Scalar(v)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			held[i] = half.BF16ToF32Scalar(h)
		}
	}
	return b, held
}

func TestQ8From(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const rows, cols = 7, 1031 // more than one Widen chunk per row
	w := randWeights(r, rows, cols)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		raw, held := rawRows(w, dt)
		d1, s1 := make([]int8, rows*cols), make([]uint16, rows)
		d2, s2 := make([]int8, rows*cols), make([]uint16, rows)
		if err := QuantizeQ8From(d1, s1, raw, dt, rows, cols); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeQ8(d2, s2, held, rows, cols); err != nil {
			t.Fatal(err)
		}
		for i := range d1 {
			if d1[i] != d2[i] {
				t.Fatalf("%v: data[%d] %d != %d", dt, i, d1[i], d2[i])
			}
		}
		for i := range s1 {
			if s1[i] != s2[i] {
				t.Fatalf("%v: scale[%d] %x != %x", dt, i, s1[i], s2[i])
			}
		}
		if err := QuantizeQ8From(d1, s1, raw[1:], dt, rows, cols); err == nil {
			t.Fatalf("%v: short input accepted", dt)
		}
	}
	err := QuantizeQ8From(make([]int8, 4), make([]uint16, 1), make([]byte, 4), dtype.I8, 1, 4)
	if err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Fatalf("unknown dtype: %v", err)
	}
}

// TestQ8MatchesReference holds QuantizeRowQ8 to the reference (q4ref_test.go) bit for bit on
// rows built to hit its corners: trained-like weights at many magnitudes, bf16- and
// fp16-rounded weights, weights on the q8 grid and exactly halfway between grid points (ties),
// fp16-subnormal scales, and rows whose largest value rounds the scale down.
func TestQ8MatchesReference(t *testing.T) {
	forEachKernel(t, testQ8MatchesReference)
}

func testQ8MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for k := range 4000 {
		n := 1 + r.IntN(300)
		w := make([]float32, n)
		mag := math.Pow(10, -9+12*r.Float64())
		for i := range w {
			w[i] = float32(r.NormFloat64() * mag)
		}
		switch k % 7 {
		case 1:
			for i := range w {
				w[i] = half.BF16ToF32Scalar(half.F32ToBF16Scalar(w[i]))
			}
		case 2:
			for i := range w {
				w[i] = half.F16ToF32Scalar(half.F32ToF16Scalar(w[i]))
			}
		case 3, 4: // on the grid of the row's own scale, or halfway between its points
			s := half.F16ToF32Scalar(half.F32ToF16Scalar(float32(mag)))
			for i := range w {
				w[i] = s * float32(r.IntN(255)-127)
				if k%7 == 4 && r.IntN(2) == 0 {
					w[i] = s * (float32(r.IntN(254)-127) + 0.5)
				}
			}
			w[r.IntN(n)] = 127 * s
		case 5: // the largest value just above a multiple of 127 fp16 steps
			s := half.F16ToF32Scalar(half.F32ToF16Scalar(float32(mag)))
			w[0] = 127 * s * (1 + float32(r.IntN(8))*0x1p-12)
		case 6: // near ties: w/s within about 2^-20..2^-13 of a half-integer, both sides
			s := half.F16ToF32Scalar(half.F32ToF16Scalar(float32(mag)))
			for i := range w {
				d := math.Ldexp(float64(r.IntN(2)*2-1), -13-r.IntN(8))
				w[i] = float32((float64(r.IntN(254)-127) + 0.5 + d) * float64(s))
			}
			w[r.IntN(n)] = 127 * s
		}
		q1, q2 := make([]int8, n), make([]int8, n)
		s1, err := QuantizeRowQ8(q1, w)
		if err != nil {
			t.Fatalf("row %d: %v", k, err) // |w| stays far below what overflows an fp16 scale
		}
		s2 := refQuantizeRowQ8(q2, w)
		if s1 != s2 || string(int8Bytes(q1)) != string(int8Bytes(q2)) {
			t.Fatalf("row %d (kind %d): scale %#04x q %v, reference %#04x %v\nw %v", k, k%7, s1, q1, s2, q2, w)
		}
	}
}

// int8Bytes copies int8s into bytes, for comparing rows.
func int8Bytes(q []int8) []byte {
	b := make([]byte, len(q))
	for i, v := range q {
		b[i] = byte(v)
	}
	return b
}

// TestNonFiniteRefused checks that both quantizers, from float32 and from bf16 bytes, refuse a
// NaN or an infinity wherever it is in a row (the kernels take whole blocks of 32 and leave a
// q8 row's tail to Go) and name its position, with every kernel set.
func TestNonFiniteRefused(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			for _, tc := range []struct {
				q4       bool
				cols, at int
			}{{false, 100, 0}, {false, 100, 45}, {false, 100, 97}, {true, 96, 0}, {true, 96, 45}, {true, 96, 95}} {
				w := randWeights(rand.New(rand.NewPCG(17, uint64(tc.at))), 1, tc.cols)
				w[tc.at] = bad
				raw, _ := rawRows(w, dtype.BF16)
				want := fmt.Sprintf("weight %d is %v", tc.at, bad)
				var errs []error
				if tc.q4 {
					errs = append(errs, QuantizeRowQ4(make([]byte, tc.cols/2), make([]uint16, 3), make([]uint16, 3), w, 32),
						QuantizeQ4From(make([]byte, tc.cols/2), make([]uint16, 3), make([]uint16, 3), raw, dtype.BF16, 1, tc.cols, 32))
				} else {
					_, err := QuantizeRowQ8(make([]int8, tc.cols), w)
					errs = append(errs, err, QuantizeQ8From(make([]int8, tc.cols), make([]uint16, 1), raw, dtype.BF16, 1, tc.cols))
				}
				for i, err := range errs {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("q4 %v, %v at %d, call %d: error %v, want one saying %q", tc.q4, bad, tc.at, i, err, want)
					}
				}
			}
		}
	})
}
