package quant

import (
	"github.com/anepack/anepack/dtype"

	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/half"
)

func TestCheckGroup(t *testing.T) {
	for _, g := range []int{32, 64, 128} {
		if err := CheckGroup(896, g); err != nil {
			t.Fatalf("896/%d: %v", g, err)
		}
	}
	err := CheckGroup(96, 64)
	if err == nil || !strings.Contains(err.Error(), "64") || !strings.Contains(err.Error(), "96") {
		t.Fatalf("96/64: error %v should name the group size and cols", err)
	}
	if CheckGroup(64, 16) == nil || CheckGroup(64, 0) == nil {
		t.Fatal("group sizes other than 32, 64, 128 accepted")
	}
	d, s, o, err := Q4Sizes(3, 256, 64)
	if err != nil || d != 384 || s != 24 || o != 24 {
		t.Fatalf("Q4Sizes(3, 256, 64) = %d %d %d %v", d, s, o, err)
	}
	if _, _, _, err := Q4Sizes(3, 100, 32); err == nil {
		t.Fatal("Q4Sizes accepted cols = 100, G = 32")
	}
}

func TestQ4Packing(t *testing.T) {
	// Levels 0..15 then 15..0 on a grid with scale 1 and offset 0: the
	// bytes must be e[2k] | e[2k+1]<<4.
	w := make([]float32, 32)
	for i := range w {
		w[i] = float32(i % 16)
		if i >= 16 {
			w[i] = float32(31 - i)
		}
	}
	data, scale, offset := make([]byte, 16), make([]uint16, 1), make([]uint16, 1)
	if err := QuantizeRowQ4(data, scale, offset, w, 32); err != nil {
		t.Fatal(err)
	}
	if s, z := half.F16ToF32Scalar(scale[0]), half.F16ToF32Scalar(offset[0]); s != 1 || z != 0 {
		t.Fatalf("scale %g offset %g, want 1 and 0", s, z)
	}
	for k := range data {
		want := byte(w[2*k]) | byte(w[2*k+1])<<4
		if data[k] != want {
			t.Fatalf("byte %d = %#02x, want %#02x", k, data[k], want)
		}
	}
}

func TestQ4ExactOnGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, group := range []int{32, 64, 128} {
		rows, cols := 5, 2*group+128
		w := make([]float32, rows*cols)
		for g := 0; g < rows*cols/group; g++ {
			s := half.F16ToF32Scalar(half.F32ToF16Scalar(float32(0.001 + r.Float64()*0.01)))
			z := float32(r.IntN(16)) // an integer offset keeps s*(q-z) exact
			if g%3 == 0 {
				z = half.F16ToF32Scalar(half.F32ToF16Scalar(float32(r.Float64() * 15)))
			}
			for i := 0; i < group; i++ {
				q := float32(r.IntN(16))
				switch i {
				case 0:
					q = 0
				case 1:
					q = 15
				}
				w[g*group+i] = s * (q - z)
			}
		}
		data, scale, offset, back := q4Buffers(rows, cols, group)
		if err := QuantizeQ4(data, scale, offset, w, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		if err := DequantizeQ4(back, data, scale, offset, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if back[i] != w[i] {
				t.Fatalf("G=%d: [%d] %g -> %g, want exact", group, i, w[i], back[i])
			}
		}
	}
}

func q4Buffers(rows, cols, group int) (data []byte, scale, offset []uint16, back []float32) {
	return make([]byte, rows*cols/2), make([]uint16, rows*cols/group), make([]uint16, rows*cols/group), make([]float32, rows*cols)
}

// q4Error quantizes w with one fit and returns the squared error per group
// and the relative RMS error of the whole matrix.
func q4Error(t *testing.T, w []float32, rows, cols, group int, fit fitMode) ([]float64, float64) {
	t.Helper()
	data, scale, offset, back := q4Buffers(rows, cols, group)
	ng := cols / group
	for r := 0; r < rows; r++ {
		err := quantizeRowQ4(data[r*cols/2:(r+1)*cols/2], scale[r*ng:(r+1)*ng], offset[r*ng:(r+1)*ng], w[r*cols:(r+1)*cols], group, fit)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := DequantizeQ4(back, data, scale, offset, rows, cols, group); err != nil {
		t.Fatal(err)
	}
	sse := make([]float64, rows*ng)
	var num, den float64
	for i := range w {
		d := float64(back[i]) - float64(w[i])
		sse[i/group] += d * d
		num += d * d
		den += float64(w[i]) * float64(w[i])
	}
	return sse, math.Sqrt(num / den)
}

// TestQ4Fits checks the per-element bound of the plain fits and that the
// chosen fit is never worse than either of them on any group, and logs the
// relative RMS error of each (docs/quantization.md quotes them: run with -v).
func TestQ4Fits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const rows, cols = 64, 896
	w := randWeights(r, rows, cols)
	for _, group := range []int{32, 64, 128} {
		sMM, eMM := q4Error(t, w, rows, cols, group, fitMinMax)
		sMZ, eMZ := q4Error(t, w, rows, cols, group, fitMinMaxZero)
		sB, eB := q4Error(t, w, rows, cols, group, fitBest)
		for g := range sB {
			if sB[g] > sMM[g]*(1+1e-12) || sB[g] > sMZ[g]*(1+1e-12) {
				t.Fatalf("G=%d group %d: chosen fit error %g > min/max %g or min/max with 0 %g", group, g, sB[g], sMM[g], sMZ[g])
			}
		}
		t.Logf("G=%3d relative RMS error: min/max %.4f, min/max incl. 0 %.4f, refined (chosen) %.4f", group, eMM, eMZ, eB)
		// Plain fit: every weight within half a step of its level (plus the
		// fp16 rounding of scale and offset, a fraction of a step).
		data, scale, offset, back := q4Buffers(rows, cols, group)
		ng := cols / group
		for row := 0; row < rows; row++ {
			if err := quantizeRowQ4(data[row*cols/2:(row+1)*cols/2], scale[row*ng:(row+1)*ng], offset[row*ng:(row+1)*ng], w[row*cols:(row+1)*cols], group, fitMinMaxZero); err != nil {
				t.Fatal(err)
			}
		}
		if err := DequantizeQ4(back, data, scale, offset, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		for i := range w {
			s := float64(half.F16ToF32Scalar(scale[i/group]))
			if d := math.Abs(float64(back[i]) - float64(w[i])); d > 0.5*s+16*s/1024 {
				t.Fatalf("G=%d [%d]: %g -> %g, |diff| %g > half a step %g", group, i, w[i], back[i], d, s/2)
			}
		}
	}
}

func TestQ4ConstantGroups(t *testing.T) {
	for _, v := range []float32{0, 1.5, -0.25} {
		w := make([]float32, 32)
		for i := range w {
			w[i] = v
		}
		data, scale, offset, back := q4Buffers(1, 32, 32)
		if err := QuantizeQ4(data, scale, offset, w, 1, 32, 32); err != nil {
			t.Fatal(err)
		}
		if err := DequantizeQ4(back, data, scale, offset, 1, 32, 32); err != nil {
			t.Fatal(err)
		}
		for i := range back {
			if math.Abs(float64(back[i]-v)) > 1e-3*math.Abs(float64(v)) {
				t.Fatalf("constant %g: [%d] = %g", v, i, back[i])
			}
		}
	}
}

func TestQ4FromAndErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const rows, cols, group = 3, 640, 64
	w := randWeights(r, rows, cols)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		raw, held := rawRows(w, dt)
		d1, s1, o1, _ := q4Buffers(rows, cols, group)
		d2, s2, o2, _ := q4Buffers(rows, cols, group)
		if err := QuantizeQ4From(d1, s1, o1, raw, dt, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		if err := QuantizeQ4(d2, s2, o2, held, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		for i := range d1 {
			if d1[i] != d2[i] {
				t.Fatalf("%v: data[%d] differs", dt, i)
			}
		}
		for i := range s1 {
			if s1[i] != s2[i] || o1[i] != o2[i] {
				t.Fatalf("%v: group %d differs", dt, i)
			}
		}
	}
	d, s, o, back := q4Buffers(rows, cols, group)
	if err := QuantizeQ4(d[1:], s, o, w, rows, cols, group); err == nil {
		t.Fatal("short data accepted")
	}
	if err := QuantizeQ4(d, s[1:], o, w, rows, cols, group); err == nil {
		t.Fatal("short scales accepted")
	}
	if err := QuantizeQ4(d[:48], s[:3], o[:3], w[:96], 1, 96, 64); err == nil || !strings.Contains(err.Error(), "64") {
		t.Fatalf("group 64 on cols 96: %v", err)
	}
	w[5] = float32(math.Inf(1))
	if err := QuantizeQ4(d, s, o, w, rows, cols, group); err == nil {
		t.Fatal("Inf accepted")
	}
	if err := DequantizeQ4(back[1:], d, s, o, rows, cols, group); err == nil {
		t.Fatal("short output accepted")
	}
}
