package kernels

import "github.com/anepack/anepack/half"

// Attention for one token (decode). A work item is one KV head and a block
// of the positions the token sees; its rows are the group query heads that
// read the KV head, so each cached key and value is loaded once for all of
// them (Qwen2.5-0.5B has 7 query heads per KV head, Qwen3-0.6B 2):
//
//	S = Q · Kᵀ · scale   [group, positions of the block], a MatMulF32 of the keys with the queries
//	P = exp(S - m)       m the row's max over the block
//	O = P · V            [group, d], a gemmNN
//
// With one block per KV head (a short context, or as many KV heads as
// threads), P is divided by its row sums before the product and O is the
// output. A long context on more threads than KV heads splits the positions
// into blocks so that every thread has work (split-K, as flash-decoding
// does); each block keeps its rows' m, sum of P and unnormalized O, and merge
// rescales them to the common max: out = Σ_b e^(m_b-m)·O_b / Σ_b e^(m_b-m)·l_b.

// decodeVBlock is the fp16 values a decode item widens at a time (into its
// slot's vbuf) before multiplying them: 64 positions of 128 values are 32 KiB.
const decodeVBlock = 64

// decodeMinBlock is the fewest positions a decode block takes when a KV
// head's positions are split between threads: below it the merge and the
// calls' overhead cost more than the spread saves.
var decodeMinBlock = 64

// attnDecode is the state of one decode call shared by its work items.
type attnDecode struct {
	first, span int // positions [first, first+span) are seen
	blocks      int // position blocks per KV head

	// The blocks' partial results when blocks > 1, [kvHeads][blocks][group]
	// rows (room for as many blocks as threads): each row's max of S, sum of
	// P, and O = P·V (d values).
	m, l, o []float32
}

// init sizes the partial results for up to threads blocks per KV head.
func (dc *attnDecode) init(heads, kvHeads, d, threads int) {
	dc.m = make([]float32, heads*threads)
	dc.l = make([]float32, heads*threads)
	dc.o = make([]float32, heads*threads*d)
}

// computeDecode is ComputeWindow for one token.
func (a *Attention) computeDecode() {
	dc := &a.decode
	last := a.pos
	dc.first = 0
	if a.window > 0 {
		dc.first = max(0, last-a.window+1)
	}
	dc.span = last - dc.first + 1
	// Enough blocks for every thread, none shorter than decodeMinBlock.
	threads := a.pool.Threads()
	dc.blocks = min((threads+a.kvHeads-1)/a.kvHeads, (dc.span+decodeMinBlock-1)/decodeMinBlock)
	dc.blocks = max(dc.blocks, 1)
	a.pool.ParallelSlots(a.kvHeads*dc.blocks, 1, a.fn)
	if dc.blocks > 1 {
		a.mergeBlocks()
	}
}

// run is the decode path's work item: items [lo, hi) of (KV head, block of
// positions) pairs, KV head major, with slot's scores buffer.
func (a *Attention) run(slot, lo, hi int) {
	dc, d, group, capacity := &a.decode, a.headDim, a.heads/a.kvHeads, a.capacity
	for item := lo; item < hi; item++ {
		g, b := item/dc.blocks, item%dc.blocks
		p0 := dc.first + b*dc.span/dc.blocks
		n := dc.first + (b+1)*dc.span/dc.blocks - p0
		q := a.q[g*group*d : (g+1)*group*d]
		head := g * capacity * d // the KV head's first value in the cache
		// Positions p0.. are slots p0%capacity onwards, wrapping at most
		// once: two runs of slots, r1 and r2 long, each with its own [group,
		// run] rows of scores.
		s0 := p0 % capacity
		r1 := min(n, capacity-s0)
		r2 := n - r1
		s := a.scratch[slot][:group*n]
		s1, s2 := s[:group*r1], s[group*r1:]
		a.scores(s1, q, head+s0*d, group, r1)
		if r2 > 0 {
			a.scores(s2, q, head, group, r2)
		}
		Scale(s, a.scale)

		out := a.out[g*group*d : (g+1)*group*d]
		part := (g*dc.blocks + b) * group
		if dc.blocks > 1 {
			out = dc.o[part*d : (part+group)*d]
		}
		for j := range group {
			p1, p2 := s1[j*r1:(j+1)*r1], s2[j*r2:(j+1)*r2]
			m := Max(p1)
			if r2 > 0 {
				m = max(m, Max(p2))
			}
			sum := expRowMax(p1, m) + expRowMax(p2, m)
			if dc.blocks > 1 {
				dc.m[part+j], dc.l[part+j] = m, sum
			} else {
				// The softmax: P's rows divided by their sums (as Softmax does).
				Scale(p1, 1/sum)
				Scale(p2, 1/sum)
			}
		}
		// O = P · V over the same runs, each output summed in position order.
		a.weighted(out, s1, head+s0*d, group, r1, false, slot)
		if r2 > 0 {
			a.weighted(out, s2, head, group, r2, true, slot)
		}
	}
}

// scores sets s ([rows, n]) to the dot products of the rows query heads q
// ([rows, d]) with the n cached keys from value at onwards: a GEMV for one
// query head, else a matrix product that loads each key once for all of them.
func (a *Attention) scores(s, q []float32, at, rows, n int) {
	d := a.headDim
	switch {
	case a.keys16 != nil && rows == 1:
		MatVecF16(s, a.keys16[at:at+n*d], q, n, d)
	case a.keys16 != nil:
		MatMulF16(s, q, a.keys16[at:at+n*d], rows, n, d)
	case rows == 1:
		MatVecF32(s, a.keys[at:at+n*d], q, n, d)
	default:
		MatMulF32(s, q, a.keys[at:at+n*d], rows, n, d)
	}
}

// weighted sets (or adds to, with add) out ([rows, d]) the products of p
// ([rows, n]) with the n cached values from value at onwards: a gemmNN,
// over decodeVBlock positions at a time widened into slot's vbuf for an fp16
// cache. Either way each output is summed in position order.
func (a *Attention) weighted(out, p []float32, at, rows, n int, add bool, slot int) {
	d := a.headDim
	if a.values16 == nil {
		gemmNN(out, d, p, n, a.values[at:], d, rows, d, n, add)
		return
	}
	buf := a.vbuf[slot]
	for b0 := 0; b0 < n; b0 += decodeVBlock {
		bn := min(decodeVBlock, n-b0)
		half.F16ToF32(buf[:bn*d], a.values16[at+b0*d:at+(b0+bn)*d])
		gemmNN(out, d, p[b0:], n, buf, d, rows, d, bn, add || b0 > 0)
	}
}

// mergeBlocks writes each query head's output from its blocks' partial
// results, rescaled to the largest of their maxima. It runs on the calling
// goroutine: heads·blocks·d multiply-adds, a sliver of the blocks' work.
func (a *Attention) mergeBlocks() {
	dc, d, group := &a.decode, a.headDim, a.heads/a.kvHeads
	for h := range a.heads {
		g, j := h/group, h%group
		out := a.out[h*d : (h+1)*d]
		m := dc.m[g*dc.blocks*group+j]
		for b := 1; b < dc.blocks; b++ {
			m = max(m, dc.m[(g*dc.blocks+b)*group+j])
		}
		var sum float32
		for b := range dc.blocks {
			r := (g*dc.blocks+b)*group + j
			w := expf32(dc.m[r] - m)
			sum += w * dc.l[r]
			if b == 0 {
				copy(out, dc.o[r*d:(r+1)*d])
				Scale(out, w)
			} else {
				Axpy(out, w, dc.o[r*d:(r+1)*d])
			}
		}
		Scale(out, 1/sum)
	}
}
