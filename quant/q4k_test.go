package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// TestQ4KScaleMinPacking: every 6-bit scale and min of every sub-block comes back from the 12
// bytes, in llama.cpp's Q4_K packing (the example bytes below are what its get_scale_min_k4
// decodes to the same values).
func TestQ4KScaleMinPacking(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 2000; it++ {
		var sc, m [8]uint8
		for j := range sc {
			sc[j], m[j] = uint8(r.IntN(64)), uint8(r.IntN(64))
		}
		var b [12]byte
		putQ4KScaleMins(b[:], &sc, &m)
		for j := 0; j < 8; j++ {
			if s, mm := Q4KScaleMin(b[:], j); s != sc[j] || mm != m[j] {
				t.Fatalf("sub-block %d: packed %d/%d, read %d/%d", j, sc[j], m[j], s, mm)
			}
		}
	}
	// Sub-block 5 with scale 0b110101 and min 0b101110: the low nibbles in byte 9, the top two
	// bits in bits 6-7 of bytes 1 (scale) and 5 (min).
	var sc, m [8]uint8
	sc[5], m[5] = 0x35, 0x2e
	var b [12]byte
	putQ4KScaleMins(b[:], &sc, &m)
	if want := [12]byte{1: 0x3 << 6, 5: 0x2 << 6, 9: 0x5 | 0xe<<4}; b != want {
		t.Fatalf("bytes % x, want % x", b, want)
	}
}

// q4kWeight is the definition of weight i of a q4k super-block, read straight from the layout.
func q4kWeight(blk []byte, i int) float32 {
	d := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk))
	dmin := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk[2:]))
	sc, m := Q4KScaleMin(blk[4:16], i/32)
	c, p := i/64, i%64
	q := blk[16+32*c+p%32]
	if p >= 32 {
		q >>= 4
	}
	return d*float32(sc)*float32(q&15) - dmin*float32(m)
}

func randomQ4KBlock(r *rand.Rand, blk []byte) {
	for i := range blk {
		blk[i] = byte(r.Uint32())
	}
	// A finite positive d and dmin of ordinary size.
	binary.LittleEndian.PutUint16(blk, half.F32ToF16Scalar(float32(1e-3*(1+r.Float64()))))
	binary.LittleEndian.PutUint16(blk[2:], half.F32ToF16Scalar(float32(1e-3*(1+r.Float64()))))
}

func TestDequantizeQ4KLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 3, 768
	data := make([]byte, rows*cols/SuperBlock*Q4KBlockBytes)
	for b := 0; b < len(data)/Q4KBlockBytes; b++ {
		randomQ4KBlock(r, data[b*Q4KBlockBytes:(b+1)*Q4KBlockBytes])
	}
	out := make([]float32, rows*cols)
	if err := DequantizeQ4K(out, data, rows, cols); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		b := i / SuperBlock
		if want := q4kWeight(data[b*Q4KBlockBytes:], i%SuperBlock); v != want {
			t.Fatalf("weight %d: %g, want %g", i, v, want)
		}
	}
	if err := DequantizeQ4K(out[:10], data, rows, cols); err == nil {
		t.Fatal("a short output was accepted")
	}
	if err := DequantizeQ4K(make([]float32, 3*896), make([]byte, 3*4*Q4KBlockBytes), 3, 896); err == nil || !strings.Contains(err.Error(), "896") {
		t.Fatalf("896 columns: %v", err)
	}
}

// kActs returns tokens [n, cols] of activations whose channels differ in scale as hidden states
// do: log-normal per-channel scales, and one channel in 64 twenty times larger; and the mean
// square of each channel (the importance a calibration run measures).
func kActs(r *rand.Rand, n, cols int) (x [][]float64, imp []float32) {
	scale := make([]float64, cols)
	for c := range scale {
		scale[c] = math.Exp(r.NormFloat64())
		if r.IntN(64) == 0 {
			scale[c] *= 20
		}
	}
	imp = make([]float32, cols)
	x = make([][]float64, n)
	for t := range x {
		x[t] = make([]float64, cols)
		for c := range x[t] {
			x[t][c] = r.NormFloat64() * scale[c]
			imp[c] += float32(x[t][c] * x[t][c] / float64(n))
		}
	}
	return x, imp
}

// outputError returns ||(W − Ŵ)·x|| / ||W·x|| over the tokens x, and the relative RMS error of
// the weights themselves.
func outputError(w, back []float32, rows, cols int, x [][]float64) (out, weights float64) {
	var num, den, wn, wd float64
	for r := 0; r < rows; r++ {
		for _, xt := range x {
			var y, e float64
			for c := 0; c < cols; c++ {
				y += float64(w[r*cols+c]) * xt[c]
				e += float64(w[r*cols+c]-back[r*cols+c]) * xt[c]
			}
			num += e * e
			den += y * y
		}
	}
	for i := range w {
		d := float64(w[i] - back[i])
		wn += d * d
		wd += float64(w[i]) * float64(w[i])
	}
	return math.Sqrt(num / den), math.Sqrt(wn / wd)
}

// TestKQuantAccuracy measures each 4-bit choice on the same weights, with and without the
// importances of the activations that multiply them, and holds the orderings that justify the
// recipe: importances lower the output error of q4k and q4, and q6k is far closer than q4k.
func TestKQuantAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 64, 1024
	w := randWeights(r, rows, cols)
	x, imp := kActs(r, 32, cols)
	back := make([]float32, rows*cols)
	errs := map[string][2]float64{}
	run := func(name string, quant func() error, deq func() error) {
		t.Helper()
		if err := quant(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := deq(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ww := outputError(w, back, rows, cols, x)
		errs[name] = [2]float64{o, ww}
		t.Logf("%-22s output %.4f  weights %.4f", name, o, ww)
	}
	k4 := make([]byte, rows*cols/SuperBlock*Q4KBlockBytes)
	k6 := make([]byte, rows*cols/SuperBlock*Q6KBlockBytes)
	src, _ := rawRows(w, dtype.F32)
	deq4 := func() error { return DequantizeQ4K(back, k4, rows, cols) }
	deq6 := func() error { return DequantizeQ6K(back, k6, rows, cols) }
	run("q4k", func() error { return QuantizeQ4KFrom(k4, src, dtype.F32, rows, cols, nil) }, deq4)
	run("q4k importance", func() error { return QuantizeQ4KFrom(k4, src, dtype.F32, rows, cols, imp) }, deq4)
	run("q6k", func() error { return QuantizeQ6KFrom(k6, src, dtype.F32, rows, cols, nil) }, deq6)
	run("q6k importance", func() error { return QuantizeQ6KFrom(k6, src, dtype.F32, rows, cols, imp) }, deq6)
	for _, g := range []int{32, 64} {
		data, scale, offset, _ := q4Buffers(rows, cols, g)
		deq := func() error { return DequantizeQ4(back, data, scale, offset, rows, cols, g) }
		name := map[int]string{32: "q4 g32", 64: "q4 g64"}[g]
		run(name, func() error { return QuantizeQ4From(data, scale, offset, src, dtype.F32, rows, cols, g) }, deq)
		run(name+" importance", func() error {
			return QuantizeQ4WeightedFrom(data, scale, offset, src, dtype.F32, rows, cols, g, imp)
		}, deq)
	}
	for _, p := range [][2]string{{"q4k importance", "q4k"}, {"q6k importance", "q6k"}, {"q4 g32 importance", "q4 g32"}, {"q4 g64 importance", "q4 g64"}} {
		if errs[p[0]][0] >= 0.97*errs[p[1]][0] {
			t.Errorf("%s: output error %.4f, not 3%% below %s's %.4f", p[0], errs[p[0]][0], p[1], errs[p[1]][0])
		}
	}
	if errs["q6k"][1] > errs["q4k"][1]/3 {
		t.Errorf("q6k weight error %.4f is not a third of q4k's %.4f", errs["q6k"][1], errs["q4k"][1])
	}
	// q4k spends 4.5 bits per weight like q4 g64, and its sub-blocks are 32 wide: it must be
	// at least as close as q4 g64.
	if errs["q4k"][1] > errs["q4 g64"][1] {
		t.Errorf("q4k weight error %.4f above q4 g64's %.4f", errs["q4k"][1], errs["q4 g64"][1])
	}
}

// TestQ4KRoundTripOnGrid: weights that are a q4k super-block's values come back within a small
// fraction of a step (the fit need not find the very same scales, only as good ones).
func TestQ4KRoundTripOnGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const n = 40
	blk := make([]byte, Q4KBlockBytes)
	w := make([]float32, SuperBlock)
	back := make([]float32, SuperBlock)
	out := make([]byte, Q4KBlockBytes)
	for it := 0; it < n; it++ {
		randomQ4KBlock(r, blk)
		DequantizeRowQ4K(w, blk)
		if err := QuantizeRowQ4K(out, w, nil); err != nil {
			t.Fatal(err)
		}
		DequantizeRowQ4K(back, out)
		var e, s float64
		for i := range w {
			e += float64(w[i]-back[i]) * float64(w[i]-back[i])
			s += float64(w[i]) * float64(w[i])
		}
		// A 4-bit level of a 6-bit-scaled sub-block is about 1/15 of its range; the refit must
		// get well under half of that.
		if rel := math.Sqrt(e / s); rel > 0.03 {
			t.Fatalf("block %d: relative RMS error %.4f of weights on a q4k grid", it, rel)
		}
	}
}

func TestQ4KSpecialBlocks(t *testing.T) {
	blk := make([]byte, Q4KBlockBytes)
	back := make([]float32, SuperBlock)
	for _, tc := range []struct {
		name string
		fill func(i int) float32
		tol  float64
	}{
		{"zeros", func(int) float32 { return 0 }, 0},
		{"constant positive", func(int) float32 { return 0.5 }, 0.01},
		{"constant negative", func(int) float32 { return -0.25 }, 0.01},
		{"one-signed", func(i int) float32 { return float32(i%37) * 0.01 }, 0.05},
		{"one sub-block", func(i int) float32 {
			if i/32 == 3 {
				return float32(i%7) - 3
			}
			return 0
		}, 0.07}, // within half the min/max step (6/15/2 = 0.2 of 3)
		{"huge", func(i int) float32 { return float32(i%11-5) * 1e4 }, 0.1},
		{"tiny", func(i int) float32 { return float32(i%11-5) * 1e-5 }, 0.1},
	} {
		w := make([]float32, SuperBlock)
		var norm float64
		for i := range w {
			w[i] = tc.fill(i)
			norm = max(norm, math.Abs(float64(w[i])))
		}
		if err := QuantizeRowQ4K(blk, w, nil); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		DequantizeRowQ4K(back, blk)
		for i := range w {
			if d := math.Abs(float64(back[i] - w[i])); d > tc.tol*norm || math.IsNaN(float64(back[i])) {
				t.Fatalf("%s: weight %d = %g, back %g", tc.name, i, w[i], back[i])
			}
		}
	}
}

func TestKQuantErrors(t *testing.T) {
	w := make([]float32, SuperBlock)
	blk4, blk6 := make([]byte, Q4KBlockBytes), make([]byte, Q6KBlockBytes)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"short q4k output", QuantizeRowQ4K(blk4[:100], w, nil), "144"},
		{"q6k 896 columns", QuantizeRowQ6K(make([]byte, 1000), make([]float32, 896), nil), "896"},
		{"q4k importance length", QuantizeRowQ4K(blk4, w, make([]float32, 10)), "importances"},
		{"q4k NaN weight", QuantizeRowQ4K(blk4, append([]float32{float32(math.NaN())}, w[1:]...), nil), "NaN"},
		{"q6k negative importance", QuantizeRowQ6K(blk6, w, append([]float32{-1}, make([]float32, 255)...)), "importance of input 0"},
		{"q4k NaN importance", QuantizeRowQ4K(blk4, w, append([]float32{float32(math.NaN())}, make([]float32, 255)...)), "importance"},
		{"q4k from int8", QuantizeQ4KFrom(blk4, make([]byte, 256), dtype.I8, 1, 256, nil), "source dtype"},
		{"q6k from short", QuantizeQ6KFrom(blk6, make([]byte, 100), dtype.F16, 1, 256, nil), "bytes"},
		{"q4 weighted group", QuantizeRowQ4Weighted(make([]byte, 48), make([]uint16, 3), make([]uint16, 3), make([]float32, 96), 64, nil), "group size 64"},
		{"KRowBytes of f16", func() error { _, err := KRowBytes(dtype.F16, 256); return err }(), "not a super-block type"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, tc.err, tc.want)
		}
	}
	if n, err := KRowBytes(dtype.Q6K, 512); n != 420 || err != nil {
		t.Errorf("KRowBytes(q6k, 512) = %d, %v", n, err)
	}
}

// TestKQuantFromMatchesRow: the From forms read f16 and bf16 sources as their float32 values.
func TestKQuantFromMatchesRow(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const rows, cols = 3, 512
	w := randWeights(r, rows, cols)
	_, imp := kActs(r, 4, cols)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} {
		src, held := rawRows(w, dt)
		for _, k := range []struct {
			dt   dtype.DType
			from func(data, src []byte, st dtype.DType, rows, cols int, imp []float32) error
			row  func(dst []byte, w, imp []float32) error
		}{{dtype.Q4K, QuantizeQ4KFrom, QuantizeRowQ4K}, {dtype.Q6K, QuantizeQ6KFrom, QuantizeRowQ6K}} {
			rb, _ := KRowBytes(k.dt, cols)
			got, want := make([]byte, rows*rb), make([]byte, rows*rb)
			if err := k.from(got, src, dt, rows, cols, imp); err != nil {
				t.Fatal(err)
			}
			for row := 0; row < rows; row++ {
				if err := k.row(want[row*rb:(row+1)*rb], held[row*cols:(row+1)*cols], imp); err != nil {
					t.Fatal(err)
				}
			}
			if string(got) != string(want) {
				t.Fatalf("%s from %s differs from the row quantizer", k.dt, dt)
			}
		}
	}
}
