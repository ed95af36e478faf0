package ane

import "github.com/anepack/anepack/runtime/cpu/kernels"

// attention is causal grouped-query attention on the CPU for a batch of n tokens at positions
// pos, pos+1, ... whose keys and values are in the cache, split over the pool by (token, head):
//
//	out[i, h] = sum_t softmax_t(q[i, h] · k[t] / sqrt(headDim)) v[t]   for t <= pos+i
//
// The ANE kernels stop at the projections (ane-facts §6: the ANE's SDPA ignores its causal
// mask), so this is the CPU's part of every layer. It reads q from the QKV kernel's output rows
// directly (row stride qStride) and writes out as [n, heads*headDim], the O kernel's input.
type attention struct {
	pool    *kernels.Pool
	fn      func(lo, hi int)
	scratch chan []float32 // one [maxTokens] score buffer per pool thread

	heads, kvHeads, headDim, maxTokens int
	scale                              float32

	// The current job.
	q            []float32 // [n][qStride], q at the start of each row
	qStride      int
	out          []float32 // [n, heads*headDim]
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

func (a *attention) compute(out, q []float32, qStride int, keys, values []float32, n, pos int) {
	a.out, a.q, a.qStride, a.keys, a.values, a.pos = out, q, qStride, keys, values, pos
	a.pool.Parallel(n*a.heads, 1, a.fn)
	a.out, a.q, a.keys, a.values = nil, nil, nil, nil
}

func (a *attention) run(lo, hi int) {
	d, group := a.headDim, a.heads/a.kvHeads
	scores := <-a.scratch
	for item := lo; item < hi; item++ {
		i, h := item/a.heads, item%a.heads
		q := a.q[i*a.qStride+h*d : i*a.qStride+(h+1)*d]
		out := a.out[(i*a.heads+h)*d : (i*a.heads+h+1)*d]
		kv := (h / group) * a.maxTokens * d
		keys, values := a.keys[kv:], a.values[kv:]
		s := scores[:a.pos+i+1]
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
