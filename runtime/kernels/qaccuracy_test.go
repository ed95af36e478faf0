package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/quant"
)

// TestQuantAccuracy measures, on realistic data, how far the quantized
// products are from the float64 product of the original float32 weights and
// activations: weights ~ N(0, 1/cols), activations N(0, 1) with 1% outliers
// 20-100x larger (like transformer hidden states). It compares the error of
// the weight quantization alone (dequantized weights times float x) with
// the kernels (q8: int16 activations per block of 32, Int16Acts; q4: int8
// per block, Int8Acts), with int8 activations per block of 32 and with one
// int8 scale per token, the cheaper alternative no kernel uses. Run with -v
// for the numbers docs/quantization.md quotes.
func TestQuantAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const n, rows, cols = 8, 256, 896
	w := randW(r, rows, cols)
	x := randActs(r, n, cols, false)
	ref := matmul64(w, x, n, rows, cols)

	var a8 Int8Acts
	a8.Quantize(x, n, cols)
	var a16 Int16Acts
	a16.Quantize(x, n, cols)
	x8, xTok := dequantActs(&a8), perTokenInt8(x, n, cols)

	// maxExtra bounds the error the kernel's activations add on their own
	// (errors add in quadrature): about 1% of |y| for int8 ones with these
	// outliers, 256 times less for int16 ones.
	check := func(name string, deq []float32, maxExtra float64, kernel func(y []float32)) {
		t.Helper()
		y := make([]float32, n*rows)
		kernel(y)
		eW := relErr(matmul64(deq, x, n, rows, cols), ref)
		eK := relErr(y64(y), ref)
		e8 := relErr(matmul64(deq, x8, n, rows, cols), ref)
		eTok := relErr(matmul64(deq, xTok, n, rows, cols), ref)
		t.Logf("%-6s relative error of y: weights only %.5f, kernels %.5f, int8 x per 32-block %.5f, int8 x per token %.5f", name, eW, eK, e8, eTok)
		if extra := math.Sqrt(max(0, eK*eK-eW*eW)); extra > maxExtra || eK >= eTok {
			t.Errorf("%s: error of the kernels %.5f (weights alone %.5f, added %.5f > %.5f, or not below per token %.5f)", name, eK, eW, extra, maxExtra, eTok)
		}
	}

	w8, s8, d8 := make([]int8, rows*cols), make([]uint16, rows), make([]float32, rows*cols)
	if err := quant.QuantizeQ8(w8, s8, w, rows, cols); err != nil {
		t.Fatal(err)
	}
	if err := quant.DequantizeQ8(d8, w8, s8, rows, cols); err != nil {
		t.Fatal(err)
	}
	check("q8", d8, 0.0002, func(y []float32) { MatMulQ8Acts(y, rows, &a16, w8, s8, rows) })
	for _, g := range []int{32, 64, 128} {
		w4, s4, o4, d4 := make([]byte, rows*cols/2), make([]uint16, rows*cols/g), make([]uint16, rows*cols/g), make([]float32, rows*cols)
		if err := quant.QuantizeQ4(w4, s4, o4, w, rows, cols, g); err != nil {
			t.Fatal(err)
		}
		if err := quant.DequantizeQ4(d4, w4, s4, o4, rows, cols, g); err != nil {
			t.Fatal(err)
		}
		check(map[int]string{32: "q4g32", 64: "q4g64", 128: "q4g128"}[g], d4, 0.015, func(y []float32) { MatMulQ4Acts(y, rows, &a8, w4, s4, o4, g, rows) })
	}
}

// matmul64 returns X·Wᵀ in float64.
func matmul64(w, x []float32, n, rows, cols int) []float64 {
	y := make([]float64, n*rows)
	for t := 0; t < n; t++ {
		for r := 0; r < rows; r++ {
			var s float64
			for c := 0; c < cols; c++ {
				s += float64(x[t*cols+c]) * float64(w[r*cols+c])
			}
			y[t*rows+r] = s
		}
	}
	return y
}

// perTokenInt8 returns x quantized to int8 with one scale per token and
// dequantized again.
func perTokenInt8(x []float32, n, cols int) []float32 {
	out := make([]float32, len(x))
	for t := 0; t < n; t++ {
		var amax float64
		for _, v := range x[t*cols : (t+1)*cols] {
			amax = max(amax, math.Abs(float64(v)))
		}
		d := amax / 127
		for c := 0; c < cols; c++ {
			out[t*cols+c] = float32(d * math.RoundToEven(float64(x[t*cols+c])/d))
		}
	}
	return out
}

func y64(y []float32) []float64 {
	o := make([]float64, len(y))
	for i, v := range y {
		o[i] = float64(v)
	}
	return o
}

// relErr returns ||got - ref|| / ||ref||.
func relErr(got, ref []float64) float64 {
	var num, den float64
	for i := range ref {
		d := got[i] - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	return math.Sqrt(num / den)
}
