package kernels

import "fmt"

// Attention computes causal grouped-query attention for a batch of n tokens at positions
// pos, pos+1, ... whose keys and values are already in the cache. Work items are (token, head)
// pairs, split over the pool:
//
//	scores[t] = (q · k[t]) * scale        for cached positions lo <= t <= pos+i
//	out       = sum_t softmax(scores)[t] * v[t]
//
// where lo is 0, or pos+i-window+1 for a sliding window of window positions. A layer's cache
// holds capacity positions per KV head; when that is less than the context it is a ring, and
// position t lives at slot t % capacity.
//
// The cache holds float32 (ComputeWindow) or fp16 (ComputeWindowF16: half the memory and the
// bytes read per token; each value is widened as it is read, so the arithmetic is the same on
// the rounded values).
//
// Query head h reads KV head h / (heads/kvHeads), as HF's repeat_kv does. The CPU backend and
// the ANE/sim backend (whose ANE programs stop at the projections) share it. An Attention is
// not safe for concurrent use; each sequence state owns one.
//
// One token (decode) splits the work by KV head, and a long context also by block of positions
// (attention_decode.go); a batch (prefill) splits by KV head and block of tokens, as matrix
// products (attention_batch.go). Both read each cached key and value once for all the query
// heads of its group.
type Attention struct {
	pool    *Pool
	fn      func(slot, lo, hi int)
	scratch [][]float32 // one [group*maxTokens] scores buffer per pool slot
	vbuf    [][]float32 // one [decodeVBlock*headDim] buffer of widened fp16 values per pool slot
	decode  attnDecode  // the decode path's shared state

	batchFn      func(slot, lo, hi int)
	prepFn       func(lo, hi int)
	batchScratch []*attnScratch // one per pool slot, grown on demand
	batch        attnBatch      // the batched path's shared state
	prepChunks   int            // position chunks per KV head in its pre-pass

	heads, kvHeads, headDim, maxTokens int
	scale                              float32

	// The current job.
	q            []float32 // [n][qStride], the heads' queries at the start of each row
	qStride      int
	out          []float32 // [n, heads*headDim]
	keys, values []float32 // one layer's cache, [kvHeads][capacity][headDim]
	keys16       []uint16  // or its fp16 keys and values (then keys and values are nil)
	values16     []uint16
	pos          int
	n            int // tokens in the batch
	qBlock       int // tokens per work item of the batched path
	capacity     int // positions per KV head in the cache
	window       int // 0: attend to every earlier position
}

// NewAttention prepares attention for heads query heads and kvHeads key/value heads of headDim
// values over a cache of maxTokens positions; scale is usually headDim^-0.5.
func NewAttention(pool *Pool, heads, kvHeads, headDim, maxTokens int, scale float32) *Attention {
	a := &Attention{pool: pool, heads: heads, kvHeads: kvHeads, headDim: headDim, maxTokens: maxTokens,
		scale: scale, scratch: make([][]float32, pool.Threads()), vbuf: make([][]float32, pool.Threads()), batchScratch: make([]*attnScratch, pool.Threads())}
	for i := range pool.Threads() {
		a.scratch[i] = make([]float32, heads/max(kvHeads, 1)*maxTokens)
		a.vbuf[i] = make([]float32, decodeVBlock*headDim)
		a.batchScratch[i] = new(attnScratch)
	}
	a.decode.init(heads, kvHeads, headDim, pool.Threads())
	a.fn, a.batchFn, a.prepFn = a.run, a.runBatch, a.prep
	return a
}

// Compute writes out ([n, heads*headDim]) for the queries of n tokens (row i of q starts at
// i*qStride) against one layer's cache of maxTokens positions per head. It allocates nothing.
func (a *Attention) Compute(out, q []float32, qStride int, keys, values []float32, n, pos int) {
	a.ComputeWindow(out, q, qStride, keys, values, n, pos, a.maxTokens, 0)
}

// ComputeWindow is Compute for a cache of capacity positions per head (a ring when it is less
// than the context) and, when window > 0, a sliding window of that many positions. The caller
// keeps capacity >= window + n - 1, so that writing this batch's keys overwrote nothing a
// query of the batch attends to.
func (a *Attention) ComputeWindow(out, q []float32, qStride int, keys, values []float32, n, pos, capacity, window int) {
	a.keys, a.values = keys, values
	a.compute(out, q, qStride, n, pos, capacity, window)
	a.keys, a.values = nil, nil
}

// ComputeWindowF16 is ComputeWindow over a cache of fp16 keys and values.
func (a *Attention) ComputeWindowF16(out, q []float32, qStride int, keys, values []uint16, n, pos, capacity, window int) {
	a.keys16, a.values16 = keys, values
	a.compute(out, q, qStride, n, pos, capacity, window)
	a.keys16, a.values16 = nil, nil
}

// compute runs the call whose cache ComputeWindow or ComputeWindowF16 set.
func (a *Attention) compute(out, q []float32, qStride int, n, pos, capacity, window int) {
	if capacity <= 0 || capacity > a.maxTokens || (window > 0 && capacity < window+n-1 && capacity < pos+n) {
		panic(fmt.Sprintf("kernels.Attention: capacity %d for a window of %d and %d tokens (context %d)", capacity, window, n, a.maxTokens))
	}
	a.out, a.q, a.qStride, a.pos, a.n = out, q, qStride, pos, n
	a.capacity, a.window = capacity, window
	switch {
	case n > 1:
		a.computeBatch(n)
	case n == 1:
		a.computeDecode()
	}
	a.out, a.q = nil, nil
}
