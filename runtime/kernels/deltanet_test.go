package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refDeltaRule is transformers' torch_recurrent_gated_delta_rule for one head, literally (decay
// first, then the memory read from the decayed state), in float64.
func refDeltaRule(s []float64, dk, dv int, q, k, v [][]float64, decay, beta []float64) [][]float64 {
	out := make([][]float64, len(q))
	for t := range q {
		for i := range s {
			s[i] *= decay[t]
		}
		mem := make([]float64, dv)
		for i := 0; i < dk; i++ {
			for j := 0; j < dv; j++ {
				mem[j] += s[i*dv+j] * k[t][i]
			}
		}
		for i := 0; i < dk; i++ {
			for j := 0; j < dv; j++ {
				s[i*dv+j] += k[t][i] * (v[t][j] - mem[j]) * beta[t]
			}
		}
		out[t] = make([]float64, dv)
		for i := 0; i < dk; i++ {
			for j := 0; j < dv; j++ {
				out[t][j] += s[i*dv+j] * q[t][i]
			}
		}
	}
	return out
}

func unit(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	var ss float64
	for i := range x {
		x[i] = r.NormFloat64()
		ss += x[i] * x[i]
	}
	for i := range x {
		x[i] /= math.Sqrt(ss)
	}
	return x
}

// TestDeltaHead runs one head through 50 tokens (odd key and value sizes) packed in strided
// buffers as the decoder lays them out, against the float64 reference, and checks that running
// the tokens in two pieces gives bit for bit the same state and outputs.
func TestDeltaHead(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, dk, dv, stride = 50, 13, 9, 40
	q64, k64, v64 := make([][]float64, n), make([][]float64, n), make([][]float64, n)
	decay, beta := make([]float64, n), make([]float64, n)
	qb, kb, vb := make([]float32, n*stride), make([]float32, n*stride), make([]float32, n*stride)
	gb := make([]float32, 2*n*3)
	for t := 0; t < n; t++ {
		q64[t], k64[t], v64[t] = unit(r, dk), unit(r, dk), make([]float64, dv)
		for i := range q64[t] {
			q64[t][i] = float64(float32(q64[t][i] / math.Sqrt(dk)))
			k64[t][i] = float64(float32(k64[t][i]))
			qb[t*stride+i], kb[t*stride+i] = float32(q64[t][i]), float32(k64[t][i])
		}
		for j := range v64[t] {
			v64[t][j] = float64(float32(r.NormFloat64()))
			vb[t*stride+j] = float32(v64[t][j])
		}
		decay[t], beta[t] = float64(float32(math.Exp(-r.Float64()))), float64(float32(r.Float64()))
		gb[t*3], gb[n*3+t*3] = float32(decay[t]), float32(beta[t])
	}
	run := func(splits ...int) ([]float32, []float32) {
		out := make([]float32, n*stride)
		h := DeltaHead{State: make([]float32, StateLen(dk, dv)), KeyDim: dk, ValueDim: dv, Q: qb, K: kb, QKStride: stride,
			V: vb, VStride: stride, Decay: gb, Beta: gb[n*3:], GStride: 3, Out: out, OutStride: stride, Scratch: make([]float32, dv)}
		t0 := 0
		for _, t1 := range append(splits, n) {
			h.Run(t0, t1)
			t0 = t1
		}
		return h.State, out
	}
	state, out := run()
	refState := make([]float64, dk*dv)
	ref := refDeltaRule(refState, dk, dv, q64, k64, v64, decay, beta)
	worst, worstS := 0.0, 0.0
	for ti := 0; ti < n; ti++ {
		for j := 0; j < dv; j++ {
			worst = max(worst, math.Abs(float64(out[ti*stride+j])-ref[ti][j]))
		}
	}
	for i, v := range refState { // the state is c·Ŝ, Ŝ [dv][dk]
		worstS = max(worstS, math.Abs(float64(state[dk*dv])*float64(state[(i%dv)*dk+i/dv])-v))
	}
	if worst > 1e-5 || worstS > 1e-5 {
		t.Errorf("largest difference from the float64 reference %.2e in the outputs, %.2e in the state", worst, worstS)
	}
	s2, o2 := run(1, 17, 17, 33)
	for i := range state {
		if s2[i] != state[i] {
			t.Fatalf("state[%d] after a split run %v; in one run %v", i, s2[i], state[i])
		}
	}
	for i := range out {
		if o2[i] != out[i] {
			t.Fatalf("out[%d] after a split run %v; in one run %v", i, o2[i], out[i])
		}
	}
}

func TestCausalConvSiLU(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, c, k = 6, 5, 4
	win := make([]float32, (n+k-1)*c)
	w := make([]float32, c*k)
	for i := range win {
		win[i] = float32(r.NormFloat64())
	}
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	out := make([]float32, n*c)
	CausalConvSiLU(out, win, w, n, c, k)
	for ti := 0; ti < n; ti++ {
		for ch := 0; ch < c; ch++ {
			var s float64
			for j := 0; j < k; j++ {
				s += float64(w[ch*k+j]) * float64(win[(ti+j)*c+ch])
			}
			want := s / (1 + math.Exp(-s))
			if d := math.Abs(float64(out[ti*c+ch]) - want); d > 1e-5 {
				t.Errorf("out[%d][%d] = %v; want %v", ti, ch, out[ti*c+ch], want)
			}
		}
	}
}

func TestDeltaNetScalars(t *testing.T) {
	for _, x := range []float32{-30, -5, -0.5, 0, 0.7, 4, 19.9, 20, 25, 100} {
		want := math.Log1p(math.Exp(float64(x)))
		if x > 20 {
			want = float64(x)
		}
		if got := Softplus(x); math.Abs(float64(got)-want) > 1e-6*max(1, want) {
			t.Errorf("Softplus(%v) = %v; want %v", x, got, want)
		}
		if got, want := Sigmoid(x), 1/(1+math.Exp(-float64(x))); math.Abs(float64(got)-want) > 1e-6 {
			t.Errorf("Sigmoid(%v) = %v; want %v", x, got, want)
		}
	}
	x := []float32{3, 4, 0}
	L2Norm(x, 1e-6)
	if math.Abs(float64(x[0])-0.6) > 1e-6 || math.Abs(float64(x[1])-0.8) > 1e-6 || x[2] != 0 {
		t.Errorf("L2Norm(3, 4, 0) = %v", x)
	}
	z := []float32{0}
	L2Norm(z, 1e-6) // all zeros: eps keeps it finite
	if z[0] != 0 {
		t.Errorf("L2Norm(0) = %v", z)
	}
	y, g := []float32{2, 2, 2}, []float32{0, 1, -100}
	MulSiLU(y, g)
	if y[0] != 0 || math.Abs(float64(y[1])-2*0.7310586) > 1e-6 || y[2] != 0 {
		t.Errorf("MulSiLU = %v", y)
	}
	y = []float32{2, 2}
	MulSigmoid(y, []float32{0, 100})
	if y[0] != 1 || y[1] != 2 {
		t.Errorf("MulSigmoid = %v", y)
	}
}

// BenchmarkDeltaHead is one Qwen3.5-2B value head (128x128 state) over a 128-token chunk:
// go test -run '^$' -bench DeltaHead ./runtime/kernels/
func BenchmarkDeltaHead(b *testing.B) {
	const n, dk, dv = 128, 128, 128
	r := rand.New(rand.NewPCG(7, 8))
	buf := func(k int) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64()) * 0.1
		}
		return x
	}
	g := make([]float32, n)
	for i := range g {
		g[i] = 0.9
	}
	h := DeltaHead{State: make([]float32, StateLen(dk, dv)), KeyDim: dk, ValueDim: dv, Q: buf(n * dk), K: buf(n * dk), QKStride: dk,
		V: buf(n * dv), VStride: dv, Decay: g, Beta: g, GStride: 1, Out: make([]float32, n*dv), OutStride: dv,
		Scratch: make([]float32, dv)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Run(0, n)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tok/s")
}
