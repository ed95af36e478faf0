package cpu

import (
	"github.com/anepack/anepack/runtime/cpu/kernels"
)

// attention computes causal grouped-query attention for a batch of n tokens at positions
// pos, pos+1, ... whose keys and values are already in the cache. Work items are (token, head)
// pairs, split over the pool:
//
//	scores[t] = (q · k[t]) * headDim^-0.5        for cached positions t <= pos+i
//	out       = sum_t softmax(scores)[t] * v[t]
//
// Query head h reads KV head h / (heads/kvHeads), as HF's repeat_kv does.
type attention struct {
	pool    *kernels.Pool
	fn      func(lo, hi int)
	scratch chan []float32 // one [maxTokens] scores buffer per pool thread

	heads, kvHeads, headDim, maxTokens int
	scale                              float32

	// The current job.
	q, out       []float32 // [n, heads*headDim]
	keys, values []float32 // this layer's cache, [kvHeads][maxTokens][headDim]
	pos          int
}

func newAttention(pool *kernels.Pool, heads, kvHeads, headDim, maxTokens int, scale float32) *attention {
	a := &attention{pool: pool, heads: heads, kvHeads: kvHeads, headDim: headDim, maxTokens: maxTokens,
		scale: scale, scratch: make(chan []float32, pool.Threads())}
	for range pool.Threads() {
		a.scratch <- make([]float32, maxTokens)
	}
	a.fn = a.run
	return a
}

// run computes out for q of n tokens against one layer's cache.
func (a *attention) compute(out, q, keys, values []float32, n, pos int) {
	a.out, a.q, a.keys, a.values, a.pos = out, q, keys, values, pos
	a.pool.Parallel(n*a.heads, 1, a.fn)
	a.out, a.q, a.keys, a.values = nil, nil, nil, nil
}

func (a *attention) run(lo, hi int) {
	d, group := a.headDim, a.heads/a.kvHeads
	scores := <-a.scratch
	for item := lo; item < hi; item++ {
		i, h := item/a.heads, item%a.heads
		q := a.q[(i*a.heads+h)*d : (i*a.heads+h+1)*d]
		out := a.out[(i*a.heads+h)*d : (i*a.heads+h+1)*d]
		kv := (h / group) * a.maxTokens * d
		keys, values := a.keys[kv:], a.values[kv:]
		n := a.pos + i + 1 // causal: positions [0, pos+i]
		s := scores[:n]
		for t := range s {
			s[t] = kernels.Dot(q, keys[t*d:(t+1)*d]) * a.scale
		}
		kernels.Softmax(s)
		clear(out)
		for t, p := range s {
			kernels.Axpy(out, p, values[t*d:(t+1)*d])
		}
	}
	a.scratch <- scores
}
