package kernels

// Attention computes causal grouped-query attention for a batch of n tokens at positions
// pos, pos+1, ... whose keys and values are already in the cache. Work items are (token, head)
// pairs, split over the pool:
//
//	scores[t] = (q · k[t]) * scale        for cached positions t <= pos+i
//	out       = sum_t softmax(scores)[t] * v[t]
//
// Query head h reads KV head h / (heads/kvHeads), as HF's repeat_kv does. The CPU backend and
// the ANE/sim backend (whose ANE programs stop at the projections) share it. An Attention is
// not safe for concurrent use; each sequence state owns one.
type Attention struct {
	pool    *Pool
	fn      func(lo, hi int)
	scratch chan []float32 // one [maxTokens] scores buffer per pool thread

	heads, kvHeads, headDim, maxTokens int
	scale                              float32

	// The current job.
	q            []float32 // [n][qStride], the heads' queries at the start of each row
	qStride      int
	out          []float32 // [n, heads*headDim]
	keys, values []float32 // one layer's cache, [kvHeads][maxTokens][headDim]
	pos          int
}

// NewAttention prepares attention for heads query heads and kvHeads key/value heads of headDim
// values over a cache of maxTokens positions; scale is usually headDim^-0.5.
func NewAttention(pool *Pool, heads, kvHeads, headDim, maxTokens int, scale float32) *Attention {
	a := &Attention{pool: pool, heads: heads, kvHeads: kvHeads, headDim: headDim, maxTokens: maxTokens,
		scale: scale, scratch: make(chan []float32, pool.Threads())}
	for range pool.Threads() {
		a.scratch <- make([]float32, maxTokens)
	}
	a.fn = a.run
	return a
}

// Compute writes out ([n, heads*headDim]) for the queries of n tokens (row i of q starts at
// i*qStride) against one layer's cache. It allocates nothing.
func (a *Attention) Compute(out, q []float32, qStride int, keys, values []float32, n, pos int) {
	a.out, a.q, a.qStride, a.keys, a.values, a.pos = out, q, qStride, keys, values, pos
	a.pool.Parallel(n*a.heads, 1, a.fn)
	a.out, a.q, a.keys, a.values = nil, nil, nil, nil
}

func (a *Attention) run(lo, hi int) {
	d, group := a.headDim, a.heads/a.kvHeads
	scores := <-a.scratch
	for item := lo; item < hi; item++ {
		i, h := item/a.heads, item%a.heads
		q := a.q[i*a.qStride+h*d : i*a.qStride+(h+1)*d]
		out := a.out[(i*a.heads+h)*d : (i*a.heads+h+1)*d]
		kv := (h / group) * a.maxTokens * d
		keys, values := a.keys[kv:], a.values[kv:]
		s := scores[:a.pos+i+1] // causal: positions [0, pos+i]
		for t := range s {
			s[t] = Dot(q, keys[t*d:(t+1)*d]) * a.scale
		}
		Softmax(s)
		clear(out)
		for t, p := range s {
			Axpy(out, p, values[t*d:(t+1)*d])
		}
	}
	a.scratch <- scores
}
