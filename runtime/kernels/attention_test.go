package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
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

// refAttention is the float64 reference of one (token, head) output: causal attention at
// position last over the positions [first, last] of a full cache [kvHeads][maxTokens][d].
func refAttention(q, keys, values []float32, kvHead, maxTokens, d, first, last int, scale float64) []float64 {
	var scores []float64
	m := math.Inf(-1)
	for p := first; p <= last; p++ {
		var s float64
		for j := 0; j < d; j++ {
			s += float64(q[j]) * float64(keys[(kvHead*maxTokens+p)*d+j])
		}
		scores = append(scores, s*scale)
		m = max(m, s*scale)
	}
	var sum float64
	for i := range scores {
		scores[i] = math.Exp(scores[i] - m)
		sum += scores[i]
	}
	out := make([]float64, d)
	for i, p := 0, first; p <= last; i, p = i+1, p+1 {
		for j := range out {
			out[j] += scores[i] / sum * float64(values[(kvHead*maxTokens+p)*d+j])
		}
	}
	return out
}

// TestAttentionBatch checks the batched (prefill) path against a float64 reference and
// against the one-token (decode) path run token by token, over group sizes 1, 2 and 7, head
// sizes that are and are not multiples of the vector width, windows with full and ring caches,
// several pool sizes and score budgets (so query blocks of 1 to 32 tokens), and decode blocks
// of at least 64 or 4 positions (so a KV head's positions split between threads, and a block
// that wraps around a ring), with float32 and fp16 caches.
func TestAttentionBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	saved, savedBlock := attnScoreBudget, decodeMinBlock
	defer func() { attnScoreBudget, decodeMinBlock = saved, savedBlock }()
	for _, c := range []struct{ heads, kvHeads, d, pos, n, window int }{
		{7, 1, 64, 0, 40, 0}, {14, 2, 64, 9, 37, 0}, {4, 4, 72, 3, 5, 0}, {6, 3, 24, 30, 19, 0},
		{8, 4, 16, 20, 33, 7}, {4, 2, 40, 0, 70, 16}, {2, 1, 8, 100, 2, 3}, {14, 2, 64, 150, 3, 0},
	} {
		for _, threads := range []int{1, 3} {
			for _, budget := range []int{saved, 300} {
				attnScoreBudget = budget
				decodeMinBlock = savedBlock
				if budget != saved {
					decodeMinBlock = 4
				}
				for _, ring := range []bool{false, true} {
					if ring && c.window == 0 {
						continue
					}
					for _, f16 := range []bool{false, true} {
						name := fmt.Sprintf("%+v threads=%d budget=%d block=%d ring=%v f16=%v", c, threads, budget, decodeMinBlock, ring, f16)
						testAttentionBatch(t, r, name, c.heads, c.kvHeads, c.d, c.pos, c.n, c.window, threads, ring, f16)
					}
				}
			}
		}
	}
}

func testAttentionBatch(t *testing.T, r *rand.Rand, name string, heads, kvHeads, d, pos, n, window, threads int, ring, f16 bool) {
	t.Helper()
	maxTokens := pos + n + 3
	capacity := maxTokens
	if ring {
		capacity = min(window+n, maxTokens) // the decoder's rule, capacity >= window + n - 1
	}
	pool := NewPool(threads)
	defer pool.Close()
	scale := 1 / math.Sqrt(float64(d))
	a := NewAttention(pool, heads, kvHeads, d, maxTokens, float32(scale))
	// The full cache for the reference, and the cache the kernels read (a ring keeps the last
	// capacity positions, written in order).
	kFull, vFull := make([]float32, kvHeads*maxTokens*d), make([]float32, kvHeads*maxTokens*d)
	keys, values := make([]float32, kvHeads*capacity*d), make([]float32, kvHeads*capacity*d)
	for p := 0; p < pos+n; p++ {
		for h := 0; h < kvHeads; h++ {
			k, v := randVec(r, d), randVec(r, d)
			if f16 { // the reference sees the values the fp16 cache holds
				k, v = roundF16(k), roundF16(v)
			}
			copy(kFull[(h*maxTokens+p)*d:], k)
			copy(vFull[(h*maxTokens+p)*d:], v)
			copy(keys[(h*capacity+p%capacity)*d:], k)
			copy(values[(h*capacity+p%capacity)*d:], v)
		}
	}
	qStride := heads*d + 5 // rows of q need not be packed
	q := randVec(r, n*qStride)
	batch, one := make([]float32, n*heads*d), make([]float32, heads*d)
	compute := a.ComputeWindow
	if f16 {
		k16, v16 := make([]uint16, len(keys)), make([]uint16, len(values))
		half.F32ToF16(k16, keys)
		half.F32ToF16(v16, values)
		compute = func(out, q []float32, qStride int, _, _ []float32, n, pos, capacity, window int) {
			a.ComputeWindowF16(out, q, qStride, k16, v16, n, pos, capacity, window)
		}
	}
	compute(batch, q, qStride, keys, values, n, pos, capacity, window)
	for i := 0; i < n; i++ {
		compute(one, q[i*qStride:], qStride, keys, values, 1, pos+i, capacity, window)
		last, first := pos+i, 0
		if window > 0 {
			first = max(0, last-window+1)
		}
		for h := 0; h < heads; h++ {
			want := refAttention(q[i*qStride+h*d:], kFull, vFull, h/(heads/kvHeads), maxTokens, d, first, last, scale)
			for j, w := range want {
				got, dec := batch[(i*heads+h)*d+j], one[h*d+j]
				if math.Abs(float64(got)-w) > 1e-5 || math.Abs(float64(dec)-w) > 1e-5 {
					t.Fatalf("%s: token %d head %d [%d]: batch %v, one token %v, float64 %v", name, i, h, j, got, dec, w)
				}
			}
		}
	}
}

// roundF16 returns x rounded to fp16 and back.
func roundF16(x []float32) []float32 {
	h := make([]uint16, len(x))
	half.F32ToF16(h, x)
	half.F16ToF32(x, h)
	return x
}

// TestAttentionBatchSizesEverySlot: a batched call sizes the scratch of every pool slot, also
// of those that ran none of its work items (here at least two of four: the call has two), so
// that a later call of that size allocates nothing whichever thread runs which item. (Before,
// a slot grew its buffers on its first item, and a prefill allocated in whichever call the
// threads' timing first gave a slot work.)
func TestAttentionBatchSizesEverySlot(t *testing.T) {
	const heads, kvHeads, d, maxTokens, n = 2, 1, 16, 32, 2
	pool := NewPool(4)
	defer pool.Close()
	a := NewAttention(pool, heads, kvHeads, d, maxTokens, 0.25)
	r := rand.New(rand.NewPCG(41, 42))
	keys, values := randVec(r, kvHeads*maxTokens*d), randVec(r, kvHeads*maxTokens*d)
	q, out := randVec(r, n*heads*d), make([]float32, n*heads*d)
	a.ComputeWindow(out, q, heads*d, keys, values, n, 10, maxTokens, 0)
	rows, ld := a.qBlock*heads/kvHeads, (a.batch.span+15)&^15
	for slot, sc := range a.batchScratch {
		if cap(sc.q) < rows*d || cap(sc.s) < rows*ld || cap(sc.inv) < rows || cap(sc.o) < rows*d {
			t.Errorf("slot %d: scratch of capacity q %d, s %d, inv %d, o %d after a call of %d rows by %d columns",
				slot, cap(sc.q), cap(sc.s), cap(sc.inv), cap(sc.o), rows, ld)
		}
	}
	if got := testing.AllocsPerRun(10, func() {
		a.ComputeWindow(out, q, heads*d, keys, values, n, 10, maxTokens, 0)
	}); got != 0 {
		t.Errorf("a second call of that size allocates %.1f times", got)
	}
}
