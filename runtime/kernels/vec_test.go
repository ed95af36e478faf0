package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func TestDotAndSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 300; n += 1 + n/8 {
		x, y := randVec(r, n), randVec(r, n+3)
		var ref, mag, sref, smag float64
		for i := range x {
			ref += float64(x[i]) * float64(y[i])
			mag += math.Abs(float64(x[i]) * float64(y[i]))
			sref += float64(x[i])
			smag += math.Abs(float64(x[i]))
		}
		tol := float64(n+16) * u
		if d := math.Abs(float64(Dot(x, y)) - ref); !(d <= tol*mag) {
			t.Fatalf("Dot n=%d: %g, want %g", n, Dot(x, y), ref)
		}
		if d := math.Abs(float64(dotGeneric(x, y)) - ref); !(d <= tol*mag) {
			t.Fatalf("dotGeneric n=%d: %g, want %g", n, dotGeneric(x, y), ref)
		}
		if d := math.Abs(float64(Sum(x)) - sref); !(d <= tol*smag) {
			t.Fatalf("Sum n=%d: %g, want %g", n, Sum(x), sref)
		}
		if d := math.Abs(float64(sumGeneric(x)) - sref); !(d <= tol*smag) {
			t.Fatalf("sumGeneric n=%d: %g, want %g", n, sumGeneric(x), sref)
		}
	}
}

func TestElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x, y := randVec(r, 37), randVec(r, 37)
	y0 := append([]float32(nil), y...)
	Axpy(y, 0.3, x)
	for i := range y {
		want := float64(y0[i]) + 0.3*float64(x[i])
		tol := (math.Abs(float64(y0[i])) + math.Abs(0.3*float64(x[i]))) / (1 << 23)
		if d := math.Abs(float64(y[i]) - want); d > tol {
			t.Fatalf("Axpy [%d] = %g, want %g", i, y[i], want)
		}
	}
	copy(y, y0)
	Add(y, x)
	for i := range y {
		if y[i] != y0[i]+x[i] {
			t.Fatalf("Add [%d] = %g", i, y[i])
		}
	}
	copy(y, y0)
	Scale(y, -3)
	for i := range y {
		if y[i] != y0[i]*-3 {
			t.Fatalf("Scale [%d] = %g", i, y[i])
		}
	}
}

// TestRMSNorm compares RMSNorm and RMSNormPlusOne with a float64 reference, on lengths that
// do and do not fill the four partial sums.
func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 3, 7, 896} {
		x, w := randVec(r, n), randVec(r, n)
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		rs := 1 / math.Sqrt(ss/float64(n)+1e-6)
		for _, plusOne := range []bool{false, true} {
			norm, name := RMSNorm, "RMSNorm"
			if plusOne {
				norm, name = RMSNormPlusOne, "RMSNormPlusOne"
			}
			dst := make([]float32, n)
			norm(dst, x, w, 1e-6)
			for i := range x {
				scale := float64(w[i])
				if plusOne {
					scale = 1 + float64(w[i])
				}
				want := scale * float64(x[i]) * rs
				if d := math.Abs(float64(dst[i]) - want); d > 4*u*math.Abs(want) {
					t.Fatalf("%s n=%d [%d] = %g, want %g", name, n, i, dst[i], want)
				}
			}
			in := append([]float32(nil), x...)
			norm(in, in, w, 1e-6) // in place
			for i := range in {
				if in[i] != dst[i] {
					t.Fatalf("%s n=%d in place differs at %d", name, n, i)
				}
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	x := []float32{1, 2, 3, float32(math.Inf(-1)), 1000, 999}
	Softmax(x)
	ref := []float64{1, 2, 3, math.Inf(-1), 1000, 999}
	var s float64
	for i := range ref {
		ref[i] = math.Exp(ref[i] - 1000)
		s += ref[i]
	}
	var total float64
	for i := range x {
		want := ref[i] / s
		if d := math.Abs(float64(x[i]) - want); d > 1e-7*math.Max(want, 1e-30) && d > 1e-38 {
			t.Fatalf("Softmax [%d] = %g, want %g", i, x[i], want)
		}
		total += float64(x[i])
	}
	if x[3] != 0 || math.Abs(total-1) > 1e-6 {
		t.Fatalf("Softmax: masked entry %g, total %g", x[3], total)
	}
}

func TestSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	g, up := randVec(r, 100), randVec(r, 100)
	g[0], g[1] = -100, 100 // saturated sigmoid both ways
	dst := make([]float32, 100)
	SwiGLU(dst, g, up)
	for i := range dst {
		gg := float64(g[i])
		want := gg / (1 + math.Exp(-gg)) * float64(up[i])
		if d := math.Abs(float64(dst[i]) - want); d > 3*u*math.Abs(want)+1e-40 {
			t.Fatalf("SwiGLU [%d] = %g, want %g", i, dst[i], want)
		}
	}
}

func TestRoPE(t *testing.T) {
	const heads, d, pos, theta = 3, 8, 5, 10000.0
	cos, sin := make([]float32, d), make([]float32, d)
	for i := 0; i < d/2; i++ { // HF: inv_freq, freqs = pos*inv_freq, emb = cat(freqs, freqs)
		f := float64(pos) / math.Pow(theta, float64(2*i)/d)
		cos[i], cos[i+d/2] = float32(math.Cos(f)), float32(math.Cos(f))
		sin[i], sin[i+d/2] = float32(math.Sin(f)), float32(math.Sin(f))
	}
	r := rand.New(rand.NewPCG(15, 16))
	x := randVec(r, heads*d)
	x0 := append([]float32(nil), x...)
	RoPE(x, heads, d, cos, sin)
	for h := 0; h < heads; h++ {
		for i := 0; i < d; i++ {
			j := (i + d/2) % d
			rot := float64(x0[h*d+j]) // rotate_half: (-x2, x1)
			if i < d/2 {
				rot = -rot
			}
			want := float64(x0[h*d+i])*float64(cos[i]) + rot*float64(sin[i])
			if diff := math.Abs(float64(x[h*d+i]) - want); diff > 1e-6 {
				t.Fatalf("RoPE head %d [%d] = %g, want %g", h, i, x[h*d+i], want)
			}
		}
	}
	// A rotation keeps each pair's length.
	for h := 0; h < heads; h++ {
		for i := 0; i < d/2; i++ {
			a := math.Hypot(float64(x[h*d+i]), float64(x[h*d+i+d/2]))
			b := math.Hypot(float64(x0[h*d+i]), float64(x0[h*d+i+d/2]))
			if math.Abs(a-b) > 1e-5*b {
				t.Fatalf("RoPE changed a pair's norm: %g -> %g", b, a)
			}
		}
	}
}

func TestRowF16(t *testing.T) {
	w := make([]uint16, 3*5)
	for i := range w {
		w[i] = half.F32ToF16Scalar(float32(i) / 4)
	}
	dst := make([]float32, 5)
	RowF16(dst, w, 2, 5)
	for i, v := range dst {
		if v != float32(10+i)/4 {
			t.Fatalf("RowF16 [%d] = %g", i, v)
		}
	}
}

// expInputs sweeps the whole useful range of exp densely, plus the edges.
func expInputs() []float32 {
	var xs []float32
	for x := -95.0; x <= 95; x += 0.0137 {
		xs = append(xs, float32(x))
	}
	return append(xs, 0, -0.0, 1e-30, -1e-30, expLo, expHi, 88.7, 88.72283, 88.72284,
		-87.33, -87.34, float32(math.Inf(-1)), float32(math.Inf(1)), math.MaxFloat32, -math.MaxFloat32)
}

// checkExp checks one exp result against math.Exp: within 3 ulp where the
// result is a normal float32, and the documented 0 / e^88 / +Inf outside.
func checkExp(t *testing.T, what string, x, got float32) {
	t.Helper()
	want := math.Exp(float64(x))
	switch {
	case x < expLo:
		if got != 0 {
			t.Fatalf("%s(%g) = %g, want 0", what, x, got)
		}
	case x > expMax:
		if !math.IsInf(float64(got), 1) {
			t.Fatalf("%s(%g) = %g, want +Inf", what, x, got)
		}
	case x > expHi:
		if float64(got) != float64(float32(math.Exp(expHi))) && math.Abs(float64(got)-math.Exp(expHi)) > 3*math.Exp(expHi)/(1<<23) {
			t.Fatalf("%s(%g) = %g, want e^88", what, x, got)
		}
	default:
		if d := math.Abs(float64(got) - want); d > 3*want/(1<<23) {
			t.Fatalf("%s(%g) = %g, want %g (%.2f ulp)", what, x, got, want, d/(want/(1<<23)))
		}
	}
}

func TestExp(t *testing.T) {
	xs := expInputs()
	for _, x := range xs {
		checkExp(t, "expf32", x, expf32(x))
	}
	// The assembly, through its softmax entry point with m = 0.
	got := make([]float32, len(xs))
	_, n := expSumFast(got, xs, 0)
	for i := range got[:n] {
		checkExp(t, "expSumAVX2", xs[i], got[i])
	}
	t.Logf("%d values, %d through the assembly", len(xs), n)
}

// TestSwiGLUAsmMatchesGo compares the assembly (via SwiGLU) with the Go twin
// at every length up to 70 (tails) over a wide range of gate values.
func TestSwiGLUAsmMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for n := 0; n <= 70; n++ {
		g, up := make([]float32, n), randVec(r, n)
		for i := range g {
			g[i] = float32(r.NormFloat64() * 20)
		}
		if n > 3 {
			g[0], g[1], g[2] = -100, 100, float32(math.Inf(-1))
		}
		dst := make([]float32, n)
		SwiGLU(dst, g, up)
		for i := range dst {
			want := g[i] / (1 + expf32(-g[i])) * up[i]
			if d := math.Abs(float64(dst[i] - want)); d > 4*math.Abs(float64(want))/(1<<23) && !(math.IsNaN(float64(want)) && math.IsNaN(float64(dst[i]))) {
				t.Fatalf("n %d: SwiGLU(%g, %g) = %g, Go twin %g", n, g[i], up[i], dst[i], want)
			}
		}
	}
}

// TestSoftmaxAsmMatchesGo compares Softmax (assembly where available) with a
// float64 softmax at odd lengths, including masked (-Inf) entries.
func TestSoftmaxAsmMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for n := 1; n <= 300; n += 1 + n/5 {
		x := randVec(r, n)
		for i := range x {
			x[i] *= 8
			if i%7 == 3 {
				x[i] = float32(math.Inf(-1))
			}
		}
		if n == 4 { // everything masked but one
			x = []float32{float32(math.Inf(-1)), 2, float32(math.Inf(-1)), float32(math.Inf(-1))}
		}
		ref := make([]float64, len(x))
		m, s := math.Inf(-1), 0.0
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		for i, v := range x {
			ref[i] = math.Exp(float64(v) - m)
			s += ref[i]
		}
		x0 := append([]float32(nil), x...)
		Softmax(x)
		for i := range x {
			want := ref[i] / s
			// x-m is rounded to float32 first (as in PyTorch), which alone
			// costs |x-m| ulp of relative error in exp(x-m).
			tol := (math.Abs(float64(x0[i])-m) + 8) * want / (1 << 23)
			if d := math.Abs(float64(x[i]) - want); d > tol || (want == 0 && x[i] != 0) {
				t.Fatalf("n %d: Softmax [%d] = %g, want %g", n, i, x[i], want)
			}
		}
	}
}

// TestRoPEPartial rotates the first rot dimensions of each head (pairs i, i+rot/2) and leaves
// the rest untouched, as HF does for a partial_rotary_factor below 1.
func TestRoPEPartial(t *testing.T) {
	const heads, d, rot = 2, 8, 4
	cos := []float32{0.5, 0.25, 0.5, 0.25}
	sin := []float32{0.75, -0.5, 0.75, -0.5}
	r := rand.New(rand.NewPCG(17, 18))
	x := randVec(r, heads*d)
	x0 := append([]float32(nil), x...)
	RoPE(x, heads, d, cos, sin)
	for h := 0; h < heads; h++ {
		v, v0 := x[h*d:(h+1)*d], x0[h*d:(h+1)*d]
		for i := 0; i < rot/2; i++ {
			a, b := v0[i], v0[i+rot/2]
			if v[i] != float32(a*cos[i])+float32(-b*sin[i]) || v[i+rot/2] != float32(b*cos[i+rot/2])+float32(a*sin[i+rot/2]) {
				t.Errorf("head %d pair %d: %v %v", h, i, v[i], v[i+rot/2])
			}
		}
		for i := rot; i < d; i++ {
			if v[i] != v0[i] {
				t.Errorf("head %d dimension %d changed from %v to %v; it is past the rotary dimensions", h, i, v0[i], v[i])
			}
		}
	}
}

// TestLayerNorm compares with a float64 reference: zero mean, unit (biased) variance, then the
// affine map.
func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	x, w, b := randVec(r, 37), randVec(r, 37), randVec(r, 37)
	for i := range x {
		x[i] = 3 + 2*x[i] // an offset the mean must remove
	}
	dst := make([]float32, 37)
	LayerNorm(dst, x, w, b, 1e-5)
	var mean, v float64
	for _, e := range x {
		mean += float64(e)
	}
	mean /= 37
	for _, e := range x {
		v += (float64(e) - mean) * (float64(e) - mean)
	}
	v /= 37
	for i := range x {
		want := (float64(x[i])-mean)/math.Sqrt(v+1e-5)*float64(w[i]) + float64(b[i])
		if math.Abs(float64(dst[i])-want) > 1e-5 {
			t.Fatalf("LayerNorm[%d] = %v; want %v", i, dst[i], want)
		}
	}
}

// TestGelu checks gelu_tanh against float64 on 2000 random inputs and its known values: 0 at
// 0, x for large x, 0 for very negative x, NaN for NaN; GeGLU is gelu(gate)*up.
func TestGelu(t *testing.T) {
	xs := []float32{-10, -3, -1, -0.5, 0, 0.25, 1, 2.5, 10}
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		xs = append(xs, float32(r.NormFloat64()*3))
	}
	got := make([]float32, len(xs))
	GeluTanh(got, xs)
	for i, x := range xs {
		f := float64(x)
		// 0.5·f·(1 + tanh(z)) written as f/(1 + exp(-2z)), which float64 computes without the
		// cancellation of 1 + tanh(z) near -1 (where the tanh form loses all digits).
		z := math.Sqrt(2/math.Pi) * (f + 0.044715*f*f*f)
		want := f / (1 + math.Exp(-2*z))
		// Relative to the result, also where gelu is tiny: a few float32 ulps (2^-23 each),
		// plus the float32 rounding of the exponent's argument 2z, which exp scales by |2z|.
		if math.Abs(float64(got[i])-want) > (8+4*math.Abs(2*z))*0x1p-23*math.Abs(want)+0x1p-126 { // float32 has no normal below 2^-126
			t.Errorf("gelu(%v) = %v; want %v", x, got[i], want)
		}
	}
	if g := geluTanh(float32(math.NaN())); g == g {
		t.Errorf("gelu(NaN) = %v", g)
	}
	if g := geluTanh(-100); g != 0 {
		t.Errorf("gelu(-100) = %v; want -0", g)
	}
	up := make([]float32, len(xs))
	for i := range up {
		up[i] = 2
	}
	gg := make([]float32, len(xs))
	GeGLU(gg, xs, up)
	for i := range xs {
		if gg[i] != got[i]*2 {
			t.Errorf("GeGLU[%d] = %v; want %v", i, gg[i], got[i]*2)
		}
	}
}

// TestMaxScale checks Max and Scale (assembly where there is some) against
// plain loops on every length up to 70, with the maximum at every position.
func TestMaxScale(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for n := 1; n <= 70; n++ {
		x := randVec(r, n)
		for at := 0; at < n; at++ {
			y := append([]float32(nil), x...)
			y[at] = 100 + float32(at)
			if got := Max(y); got != y[at] {
				t.Fatalf("Max of %d values with %g at %d = %g", n, y[at], at, got)
			}
		}
		y := append([]float32(nil), x...)
		Scale(y, 0.37)
		for i := range y {
			if want := x[i] * 0.37; y[i] != want {
				t.Fatalf("Scale n=%d [%d] = %g, want %g", n, i, y[i], want)
			}
		}
	}
}

// TestGeluAsmMatchesGo compares GeluTanh and GeGLU (assembly where available) with the Go
// twin geluTanh at every length up to 70 (tails): the assembly does the same float32
// operations in the same order around its exponential, which is within 2 ulp of expf32, so
// the results agree within 4 ulp (NaN for NaN, infinities exactly).
func TestGeluAsmMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	same := func(a, b float32) bool {
		if a != a || b != b || math.IsInf(float64(b), 0) {
			return (a != a && b != b) || a == b
		}
		return math.Abs(float64(a-b)) <= 4*math.Abs(float64(b))/(1<<23)
	}
	for n := 0; n <= 70; n++ {
		x, up := make([]float32, n), randVec(r, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 4)
		}
		if n > 5 {
			x[0], x[1], x[2], x[3], x[4] = -100, 100, float32(math.Inf(-1)), float32(math.Inf(1)), -1e-30
		}
		gelu, glu := make([]float32, n), make([]float32, n)
		GeluTanh(gelu, x)
		GeGLU(glu, x, up)
		for i := range x {
			if want := geluTanh(x[i]); !same(gelu[i], want) {
				t.Fatalf("n %d: GeluTanh(%g) = %g, Go twin %g", n, x[i], gelu[i], want)
			}
			if want := geluTanh(x[i]) * up[i]; !same(glu[i], want) {
				t.Fatalf("n %d: GeGLU(%g, %g) = %g, Go twin %g", n, x[i], up[i], glu[i], want)
			}
		}
	}
}

// TestAddMatchesLoop checks Add (the axpy kernel with a = 1 where there is assembly) against
// the plain float32 sum at every length up to 40.
func TestAddMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for n := 0; n <= 40; n++ {
		y, x := randVec(r, n), randVec(r, n)
		want := make([]float32, n)
		for i := range want {
			want[i] = y[i] + x[i]
		}
		Add(y, x)
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: Add [%d] = %g, want %g", n, i, y[i], want[i])
			}
		}
	}
}

// TestArgmax compares Argmax with the element-by-element scan (the first strictly larger value
// wins) on lengths around its block of 1024, with ties, NaNs, infinities and signed zeros.
func TestArgmax(t *testing.T) {
	scan := func(x []float32) int {
		best := 0
		for i, v := range x {
			if v > x[best] {
				best = i
			}
		}
		return best
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	r := rand.New(rand.NewPCG(31, 32))
	check := func(name string, x []float32) {
		t.Helper()
		if got, want := Argmax(x), scan(x); len(x) > 0 && got != want || len(x) == 0 && got != 0 {
			t.Fatalf("%s (n=%d): Argmax = %d, want %d", name, len(x), got, want)
		}
	}
	check("empty", nil)
	for _, n := range []int{1, 7, 8, 1023, 1024, 1025, 3000, 151936} {
		x := randVec(r, n)
		check("random", x)
		// Ties: the largest value again, later and earlier.
		i := Argmax(x)
		x[n-1] = x[i]
		check("tie after", x)
		if i > 0 {
			x[i/2] = x[i]
			check("tie before", x)
		}
		// Integers in a small range: many ties, the first must win.
		for j := range x {
			x[j] = float32(r.IntN(5))
		}
		check("many ties", x)
		// NaNs: at the start (0 wins), in a block that also holds the largest value, everywhere.
		y := randVec(r, n)
		y[n-1] = 10
		if n > 1 {
			y[n-2] = nan
		}
		check("NaN beside the largest", y)
		y[0] = nan
		check("NaN first", y)
		for j := range y {
			y[j] = nan
		}
		y[0] = 1
		check("NaNs after the first", y)
		// Infinities and signed zeros.
		z := make([]float32, n)
		for j := range z {
			z[j] = float32(math.Inf(-1))
		}
		check("all -Inf", z)
		z[n/2] = float32(math.Copysign(0, -1))
		z[n-1] = 0
		check("-0 before +0", z)
		z[n-1] = inf
		check("+Inf last", z)
	}
}
