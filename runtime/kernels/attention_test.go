package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionWindowRing checks sliding-window attention over a ring cache against the same
// window over a full cache (bit for bit: the positions are visited in the same order), and the
// window against a float64 reference; a window as wide as the context is full attention.
func TestAttentionWindowRing(t *testing.T) {
	const heads, kvHeads, d, maxTokens, window, n = 4, 2, 8, 64, 5, 3
	const ring = window + n - 1 + 2 // the decoder's rule (capacity >= window + batch - 1), plus slack
	pool := NewPool(2)
	defer pool.Close()
	full := NewAttention(pool, heads, kvHeads, d, maxTokens, 0.5)
	r := rand.New(rand.NewPCG(31, 32))
	pos := 40 // the batch is positions 40, 41, 42
	kFull, vFull := make([]float32, kvHeads*maxTokens*d), make([]float32, kvHeads*maxTokens*d)
	kRing, vRing := make([]float32, kvHeads*ring*d), make([]float32, kvHeads*ring*d)
	for p := 0; p < pos+n; p++ { // written in order, so the ring keeps the last `ring` positions
		for h := 0; h < kvHeads; h++ {
			k, v := randVec(r, d), randVec(r, d)
			copy(kFull[(h*maxTokens+p)*d:], k)
			copy(vFull[(h*maxTokens+p)*d:], v)
			copy(kRing[(h*ring+p%ring)*d:], k)
			copy(vRing[(h*ring+p%ring)*d:], v)
		}
	}
	q := randVec(r, n*heads*d)
	a, b := make([]float32, n*heads*d), make([]float32, n*heads*d)
	full.ComputeWindow(a, q, heads*d, kFull, vFull, n, pos, maxTokens, window)
	full.ComputeWindow(b, q, heads*d, kRing, vRing, n, pos, ring, window)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("ring and full cache differ at %d: %v vs %v", i, b[i], a[i])
		}
	}
	// float64 reference of the window for token 2, head 3 (KV head 1).
	i, h := 2, 3
	last := pos + i
	var scores []float64
	m := math.Inf(-1)
	for p := last - window + 1; p <= last; p++ {
		var s float64
		for j := 0; j < d; j++ {
			s += float64(q[i*heads*d+h*d+j]) * float64(kFull[(1*maxTokens+p)*d+j])
		}
		scores = append(scores, s*0.5)
		m = max(m, s*0.5)
	}
	var sum float64
	for j := range scores {
		scores[j] = math.Exp(scores[j] - m)
		sum += scores[j]
	}
	for j := 0; j < d; j++ {
		var want float64
		for k, p := 0, last-window+1; p <= last; k, p = k+1, p+1 {
			want += scores[k] / sum * float64(vFull[(1*maxTokens+p)*d+j])
		}
		if got := a[i*heads*d+h*d+j]; math.Abs(float64(got)-want) > 1e-5 {
			t.Errorf("out[%d] = %v; float64 reference %v", j, got, want)
		}
	}
	// A window covering the whole context equals full attention.
	c := make([]float32, n*heads*d)
	full.Compute(c, q, heads*d, kFull, vFull, n, pos)
	full.ComputeWindow(b, q, heads*d, kFull, vFull, n, pos, maxTokens, maxTokens)
	for i := range c {
		if c[i] != b[i] {
			t.Fatalf("a context-wide window differs from full attention at %d", i)
		}
	}
}
