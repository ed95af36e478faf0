package kernels

import "github.com/anepack/anepack/half"

// Attention for a batch of tokens (prefill) as matrix products. A work item
// is one KV head and a block of consecutive query tokens; its rows are those
// tokens' query heads that read the KV head (group of them per token), so
// each key and value is loaded once for all of them instead of once per
// (token, head) pair as in the decode path:
//
//	S = (scale·Q) · Kᵀ        [rows, span]  over the positions the block sees
//	P = exp(S - the row's max) over the row's own causal (and window) range, 0 elsewhere
//	O = P · V / the row's sum of P   [rows, d]
//
// Both products run on gemmNN, which wants B row-major along its outputs:
// for S that is Kᵀ, so a first pass transposes each KV head's keys of the
// whole batch's span once per call (cheap: d values per position against
// the group·n·d multiply-adds each key takes part in), and unrolls the
// values when the span wraps around a ring cache or the cache is fp16 (widened
// once per call). The softmax runs on Max/expSum/Scale.

// attnScoreBudget bounds the scores of one work item (rows x span float32,
// 1 MiB): the query block shrinks as the span grows, so a long context costs
// small items rather than a large buffer per thread.
var attnScoreBudget = 1 << 18

// maxQueryBlock bounds the tokens of one work item: 32 tokens of 7 query
// heads are 224 rows, plenty to amortize a key's load.
const maxQueryBlock = 32

// attnScratch is one thread's buffers for the batched path, grown for every
// slot at the start of a call (sizeScratch: a long prompt's first pass
// allocates; later passes of that length do not).
type attnScratch struct {
	q, s, o []float32
	inv     []float32 // 1 / each row's sum of exponentials
}

// attnBatch is the state of one batched call shared by its work items.
type attnBatch struct {
	first0 int       // the first position any token of the batch sees
	span   int       // positions [first0, first0+span) are seen
	ldk    int       // row stride of kt, span rounded up to 16, plus 16 of slack
	kt     []float32 // [kvHeads][d][ldk] keys of the span, transposed
	vu     []float32 // [kvHeads][span][d] values of the span, unrolled
	unroll bool      // whether vu holds the values (else they are read in place): a ring wraps, or the cache is fp16
}

// queryBlock returns the tokens per work item for a batch of n tokens whose
// widest span is span positions: within attnScoreBudget, at most
// maxQueryBlock, and small enough to give every pool thread about two items.
func (a *Attention) queryBlock(n, span int) int {
	group := a.heads / a.kvHeads
	bq := attnScoreBudget / max(1, group*(span+16))
	bq = min(bq, maxQueryBlock, n*a.kvHeads/max(1, 2*a.pool.Threads()))
	return max(bq, 1)
}

// computeBatch is ComputeWindow for n > 1 tokens.
func (a *Attention) computeBatch(n int) {
	b, d := &a.batch, a.headDim
	last := a.pos + n - 1
	b.first0 = 0
	if a.window > 0 {
		b.first0 = max(0, a.pos-a.window+1)
	}
	b.span = last - b.first0 + 1
	b.ldk = (b.span+15)&^15 + 16
	b.kt = grow(b.kt, a.kvHeads*d*b.ldk)
	b.unroll = b.first0%a.capacity+b.span > a.capacity || a.values16 != nil
	if b.unroll {
		b.vu = grow(b.vu, a.kvHeads*b.span*d)
	}
	// The pre-pass: one item per KV head and block of 64 positions.
	chunks := (b.span + 63) / 64
	a.prepChunks = chunks
	a.pool.Parallel(a.kvHeads*chunks, 1, a.prepFn)

	a.qBlock = a.queryBlock(n, b.span)
	a.sizeScratch(a.qBlock*(a.heads/a.kvHeads), (b.span+15)&^15)
	blocks := (n + a.qBlock - 1) / a.qBlock
	a.pool.ParallelSlots(a.kvHeads*blocks, 1, a.batchFn)
}

// sizeScratch grows every slot's scratch for work items of up to rows rows over ld columns of
// scores, before the items run: which slot runs which item depends on the threads' timing, and
// a slot growing its buffers when it first gets an item would allocate in whichever call that
// happens to be, not in the first call of a size.
func (a *Attention) sizeScratch(rows, ld int) {
	d := a.headDim
	for _, sc := range a.batchScratch {
		sc.q = grow(sc.q, rows*d)
		sc.s = grow(sc.s, rows*ld)
		sc.inv = grow(sc.inv, rows)
		sc.o = grow(sc.o, rows*d)
	}
}

// prep is the pre-pass's work item: for items [lo, hi) of (KV head, 64
// positions), the keys transposed into kt (and the pad columns zeroed by the
// chunk that ends the span), the values unrolled into vu when b.unroll.
func (a *Attention) prep(lo, hi int) {
	b, d, capacity := &a.batch, a.headDim, a.capacity
	var wide [prepWiden]float32 // an fp16 key, widened prepWiden values at a time
	for item := lo; item < hi; item++ {
		g, ch := item/a.prepChunks, item%a.prepChunks
		p0, p1 := ch*64, min(b.span, ch*64+64)
		head := g * capacity * d
		kt := b.kt[g*d*b.ldk : (g+1)*d*b.ldk]
		for p := p0; p < p1; p++ {
			at := head + (b.first0+p)%capacity*d
			if a.keys16 == nil {
				for c, v := range a.keys[at : at+d] {
					kt[c*b.ldk+p] = v
				}
			} else {
				for c0 := 0; c0 < d; c0 += prepWiden {
					w := wide[:min(prepWiden, d-c0)]
					half.F16ToF32(w, a.keys16[at+c0:at+c0+len(w)])
					for c, v := range w {
						kt[(c0+c)*b.ldk+p] = v
					}
				}
			}
			if b.unroll {
				dst := b.vu[(g*b.span+p)*d : (g*b.span+p+1)*d]
				if a.values16 == nil {
					copy(dst, a.values[at:at+d])
				} else {
					half.F16ToF32(dst, a.values16[at:at+d])
				}
			}
		}
		if p1 == b.span {
			for c := 0; c < d; c++ {
				clear(kt[c*b.ldk+b.span : (c+1)*b.ldk])
			}
		}
	}
}

// prepWiden is how many values of an fp16 key prep widens at a time, on the stack.
const prepWiden = 128

// runBatch is the work item of the batched path: items [lo, hi) of
// (KV head, query block) pairs, KV head major.
func (a *Attention) runBatch(slot, lo, hi int) {
	sc := a.batchScratch[slot]
	blocks := (a.n + a.qBlock - 1) / a.qBlock
	for item := lo; item < hi; item++ {
		g, blk := item/blocks, item%blocks
		i0 := blk * a.qBlock
		a.block(sc, g, i0, min(a.n, i0+a.qBlock))
	}
}

// block computes the outputs of tokens [i0, i1) for the query heads of KV
// head g.
func (a *Attention) block(sc *attnScratch, g, i0, i1 int) {
	b, d, group, capacity := &a.batch, a.headDim, a.heads/a.kvHeads, a.capacity
	rows := (i1 - i0) * group
	// The positions the block sees: from its first token's first to its last
	// token's last; c0 is the first's column in kt.
	last := a.pos + i1 - 1
	first := 0
	if a.window > 0 {
		first = max(0, a.pos+i0-a.window+1)
	}
	span := last - first + 1
	ld := (span + 15) &^ 15 // S's row stride: whole vectors for gemmNN
	c0 := first - b.first0

	// Q: row (i-i0)*group+j is query head g*group+j of token i, scaled.
	sc.q = grow(sc.q, rows*d)
	for i := i0; i < i1; i++ {
		src := a.q[i*a.qStride+g*group*d : i*a.qStride+(g+1)*group*d]
		dst := sc.q[(i-i0)*group*d : (i-i0+1)*group*d]
		for c, v := range src {
			dst[c] = v * a.scale
		}
	}

	// S = Q · Kᵀ over ld columns (those past span are padding), then each
	// row's softmax over its own range and zeros elsewhere.
	sc.s = grow(sc.s, rows*ld)
	sc.inv = grow(sc.inv, rows)
	kt := b.kt[g*d*b.ldk+c0:]
	gemmNN(sc.s, ld, sc.q, d, kt, b.ldk, rows, ld, d, false)
	for i := i0; i < i1; i++ {
		lastI := a.pos + i
		firstI := 0
		if a.window > 0 {
			firstI = max(0, lastI-a.window+1)
		}
		lo, hi := firstI-first, lastI-first+1
		for j := 0; j < group; j++ {
			r := (i-i0)*group + j
			row := sc.s[r*ld : (r+1)*ld]
			sc.inv[r] = 1 / expRow(row[lo:hi])
			clear(row[:lo])
			clear(row[hi:])
		}
	}

	// O = P · V over the span's values: in place in the cache, or unrolled.
	var v []float32
	if b.unroll {
		v = b.vu[(g*b.span+c0)*d : (g*b.span+c0+span)*d]
	} else {
		slot := first % capacity
		v = a.values[(g*capacity+slot)*d : (g*capacity+slot+span)*d]
	}
	sc.o = grow(sc.o, rows*d)
	gemmNN(sc.o, d, sc.s, ld, v, d, rows, d, span, false)
	for r := 0; r < rows; r++ {
		Scale(sc.o[r*d:(r+1)*d], sc.inv[r])
	}
	for i := i0; i < i1; i++ {
		dst := a.out[(i*a.heads+g*group)*d : (i*a.heads+(g+1)*group)*d]
		copy(dst, sc.o[(i-i0)*group*d:(i-i0+1)*group*d])
	}
}

// expRow replaces x by exp(x - max(x)) and returns its sum: Softmax without the division,
// which block applies to the d outputs of the row instead of to its span of probabilities.
func expRow(x []float32) float32 { return expRowMax(x, Max(x)) }
