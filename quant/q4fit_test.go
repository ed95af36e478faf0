package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
)

// fitCorpus returns groups of n weights meant to reach every branch of the q4 fit: trained-like
// weights at many magnitudes (also rounded to bf16 and fp16, as checkpoints hold them), one-signed
// groups, few distinct values, weights exactly on a q4 grid (where several candidates tie at zero
// error), signed zeros, constant groups, values on the rounding boundaries of the min/max fit,
// fp16-subnormal and fp16-overflowing scales, float32 subnormals, and huge exponent spreads.
func fitCorpus(r *rand.Rand, n, count int) [][]float32 {
	var out [][]float32
	f16 := func(v float32) float32 { return half.F16ToF32Scalar(half.F32ToF16Scalar(v)) }
	bf16 := func(v float32) float32 { return half.BF16ToF32Scalar(half.F32ToBF16Scalar(v)) }
	for k := 0; k < count; k++ {
		w := make([]float32, n)
		mag := math.Pow(10, -6+8*r.Float64())
		kind := k % 16
		for i := range w {
			v := r.NormFloat64() * mag
			if r.IntN(64) == 0 {
				v *= 8
			}
			w[i] = float32(v)
		}
		switch kind {
		case 1:
			for i := range w {
				w[i] = bf16(w[i])
			}
		case 2:
			for i := range w {
				w[i] = f16(w[i])
			}
		case 3: // one sign
			sign := float32(1 - 2*r.IntN(2))
			for i := range w {
				w[i] = sign * float32(math.Abs(float64(w[i])))
			}
		case 4: // uniform on a random interval, possibly far from 0
			a, b := r.NormFloat64()*mag, r.Float64()*mag
			for i := range w {
				w[i] = float32(a + b*r.Float64())
			}
		case 5: // few distinct values
			vals := []float32{float32(r.NormFloat64() * mag), float32(r.NormFloat64() * mag), float32(r.NormFloat64() * mag)}
			m := 1 + r.IntN(3)
			for i := range w {
				w[i] = vals[r.IntN(m)]
			}
		case 6: // on a q4 grid: several candidates fit exactly
			s := f16(float32(mag * (0.1 + r.Float64())))
			z := float32(r.IntN(16))
			if r.IntN(2) == 0 {
				z = f16(float32(r.Float64()*30 - 8))
			}
			for i := range w {
				w[i] = s * (float32(r.IntN(16)) - z)
			}
		case 7: // signed zeros at the ends, or everywhere
			for i := range w {
				switch r.IntN(4) {
				case 0:
					w[i] = float32(math.Copysign(0, -1))
				case 1:
					w[i] = 0
				case 2:
					w[i] = float32(math.Abs(float64(w[i])))
				}
			}
			if r.IntN(3) == 0 {
				for i := range w {
					if w[i] != 0 {
						w[i] = 0
					}
				}
			}
		case 8: // constant, or constant but one
			c := w[0]
			for i := range w {
				w[i] = c
			}
			if r.IntN(2) == 0 {
				w[r.IntN(n)] = float32(r.NormFloat64() * mag)
			}
		case 9: // on the rounding boundaries of the min/max fit
			lo, hi := float32(-mag*r.Float64()), float32(mag*r.Float64())
			st := float64(hi-lo) / 15
			for i := range w {
				w[i] = float32(float64(lo) + (float64(r.IntN(15))+0.5)*st)
			}
			w[0], w[1] = lo, hi
		case 10: // fp16-subnormal or vanishing scales
			for i := range w {
				w[i] *= float32(1e-4 / mag * math.Pow(10, -4*r.Float64()))
			}
		case 11: // fp16-overflowing scales and offsets
			for i := range w {
				w[i] *= float32(1e5 / mag * math.Pow(10, 30*r.Float64()))
			}
		case 12: // one huge outlier among tiny values
			for i := range w {
				w[i] *= 1e-12
			}
			w[r.IntN(n)] = float32(mag * 1e3)
		case 13: // float32 subnormals
			for i := range w {
				w[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
			}
		case 14: // narrow range far from zero (large offsets)
			c := float32(r.NormFloat64() * mag * 1000)
			for i := range w {
				w[i] = c + float32(r.NormFloat64()*mag)
			}
		}
		out = append(out, w)
	}
	return out
}

// TestQ4FitMatchesReference holds the q4 fit to the reference (q4ref_test.go) bit for bit:
// scale, offset and every level of every corpus group, in all three group sizes, with the Go
// kernels and (where the CPU has them) the assembly ones.
func TestQ4FitMatchesReference(t *testing.T) {
	forEachKernel(t, testQ4FitMatchesReference)
}

// forEachKernel runs test with the Go code of the quantizers and with every assembly kernel
// set the CPU can run.
func forEachKernel(t *testing.T, test func(t *testing.T)) {
	defer func(q4 int, q8 bool) { q4Kernels, useQ8Asm = q4, q8 }(q4Kernels, useQ8Asm)
	q4Kernels, useQ8Asm = q4Go, false
	t.Run("go", test)
	if q4Best >= q4AVX2 {
		q4Kernels, useQ8Asm = q4AVX2, hasQ8Asm
		t.Run("avx2", test)
	}
	if q4Best >= q4AVX512 {
		q4Kernels = q4AVX512
		t.Run("avx512", test)
	}
	if q4Best < q4AVX512 {
		t.Logf("this CPU runs q4 kernel set %d of %d: the others are untested here", q4Best, q4AVX512)
	}
}

func testQ4FitMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	count := 6000
	if testing.Short() {
		count = 1000
	}
	for _, n := range []int{32, 64, 128} {
		q1, q2 := make([]uint8, n), make([]uint8, n)
		var f q4Fit // one for all groups, as the row quantizer keeps it: nothing may leak between groups
		data := make([]byte, n/2)
		for gi, w := range fitCorpus(r, n, count) {
			s1, o1 := f.fitGroup(data, w, fitBest)
			for i := range q1 {
				q1[i] = data[i/2] >> (4 * (i & 1)) & 15
			}
			s2, o2 := refFitGroupQ4(q2, w)
			if s1 != s2 || o1 != o2 || string(q1) != string(q2) {
				t.Fatalf("G=%d group %d (kind %d): scale %#04x offset %#04x levels %v, reference %#04x %#04x %v\nweights %v",
					n, gi, gi%16, s1, o1, q1, s2, o2, q2, w)
			}
			// The slow path, which the fast one falls back to, must agree as well.
			if gi%8 == 0 {
				s1, o1 = fitGroupQ4Slow(q1, w, fitBest)
				if s1 != s2 || o1 != o2 || string(q1) != string(q2) {
					t.Fatalf("G=%d group %d (kind %d): slow fit scale %#04x offset %#04x levels %v, reference %#04x %#04x %v",
						n, gi, gi%16, s1, o1, q1, s2, o2, q2)
				}
			}
		}
	}
}

// TestRoundF16 checks the fit's inline fp16 rounding against package half on every float32
// whose exponent is near fp16's range (all mantissas of the exponents from 2^-26 to 2^17, both
// signs, sampled) and on the edges: the subnormal boundary, 65504, 65519, 65520, Inf, 0.
func TestRoundF16(t *testing.T) {
	check := func(f float32) {
		h, v := roundF16(f)
		wh := half.F32ToF16Scalar(f)
		wv := half.F16ToF32Scalar(wh)
		if h != wh || math.Float32bits(v) != math.Float32bits(wv) {
			t.Fatalf("roundF16(%g = %#08x) = %#04x %g, want %#04x %g", f, math.Float32bits(f), h, v, wh, wv)
		}
	}
	for e := uint32(127 - 26); e <= 127+17; e++ {
		for m := uint32(0); m < 1<<23; m += 1 + m%97 {
			for _, s := range []uint32{0, 1 << 31} {
				check(math.Float32frombits(s | e<<23 | m))
			}
		}
	}
	for _, f := range []float32{0, 1, 0x1p-14, 0x1.ffcp-15, 0x1.fffp-15, 65504, 65519, 65519.99, 65520, 65536, float32(math.Inf(1)), 1e-8} {
		check(f)
		check(-f)
	}
}

// TestMinMaxF32 checks the fit's min/max against the builtins, signed zeros included.
func TestMinMaxF32(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	negZero := float32(math.Copysign(0, -1))
	pool := []float32{0, negZero, 1, -1, 0x1p-149, -0x1p-149, math.MaxFloat32, -math.MaxFloat32, 3.5, -2.25}
	for range 20000 {
		w := make([]float32, 1+r.IntN(6))
		for i := range w {
			if r.IntN(3) == 0 {
				w[i] = float32(r.NormFloat64())
			} else {
				w[i] = pool[r.IntN(len(pool))]
			}
		}
		lo, hi := w[0], w[0]
		for _, v := range w[1:] {
			lo, hi = min(lo, v), max(hi, v)
		}
		gl, gh := minMaxF32(w)
		if math.Float32bits(gl) != math.Float32bits(lo) || math.Float32bits(gh) != math.Float32bits(hi) {
			t.Fatalf("minMaxF32(%v) = %v, %v; builtins give %v, %v", w, gl, gh, lo, hi)
		}
	}
}
