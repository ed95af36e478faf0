package tokenizer

// BPE merging. HF's Word::merge_all repeatedly applies the merge with the lowest rank, the
// leftmost one among equal ranks (a heap ordered by (rank, position) whose stale entries are
// skipped). Short words use an equivalent O(n²) scan over a compact array, which beats a heap
// for the few symbols most words have; long words use the heap. TestBPEHeapMatchesScan checks
// that both agree.

const noRank = 0xFFFFFFFF

// smallWordMax is the longest word (in initial symbols) merged by the array scan.
var smallWordMax = 48

type bpeScratch struct {
	syms, ranks, res []uint32
	next, prev       []int32
	h                mergeHeap
}

// merge returns the rank and result id of the pair (a, b), or noRank.
func (t *tables) merge(a, b uint32) (rank, result uint32) {
	h := ((uint64(a)<<32 | uint64(b)) * hashMul) >> (64 - t.mergeBits)
	m := t.merges
	for {
		e := m[4*h : 4*h+4 : 4*h+4]
		if e[0] == noID {
			return noRank, 0
		}
		if e[0] == a && e[1] == b {
			return e[2], e[3]
		}
		h = (h + 1) & t.mergeMask
	}
}

// bpe returns the ids of the byte-level word w (len >= 2); the slice is scratch owned by e.
func (e *bpeScratch) bpe(t *tables, w string) []uint32 {
	syms := e.syms[:0]
	for i := 0; i < len(w); i++ {
		syms = append(syms, t.byteIDs[w[i]])
	}
	return e.mergeSyms(t, syms)
}

// mergeSyms applies the merges to the initial symbols syms (which must be e.syms) and returns
// the final ids; the slice is scratch owned by e.
func (e *bpeScratch) mergeSyms(t *tables, syms []uint32) []uint32 {
	if len(syms) > smallWordMax {
		return e.bpeHeap(t, syms)
	}
	ranks, res := e.ranks[:0], e.res[:0]
	for i := 0; i+1 < len(syms); i++ {
		r, x := t.merge(syms[i], syms[i+1])
		ranks = append(ranks, r)
		res = append(res, x)
	}
	for {
		best, bi := uint32(noRank), -1
		for i, r := range ranks {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = res[bi]
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		res = append(res[:bi], res[bi+1:]...)
		if bi > 0 {
			ranks[bi-1], res[bi-1] = t.merge(syms[bi-1], syms[bi])
		}
		if bi < len(syms)-1 {
			ranks[bi], res[bi] = t.merge(syms[bi], syms[bi+1])
		}
	}
	e.syms, e.ranks, e.res = syms, ranks, res
	return syms
}

type mergeCand struct {
	rank   uint32
	pos    int32
	result uint32
}

// mergeHeap is a binary min-heap ordered by (rank, position), HF's BinaryHeap<Merge> order. It
// is typed rather than container/heap so that pushing a candidate allocates nothing: long words
// (all of a Gemma segment is one word) push one candidate per merge.
type mergeHeap []mergeCand

func (c mergeCand) less(d mergeCand) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

// init orders an arbitrary slice into a heap.
func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(c mergeCand) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].less(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeCand {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	*h = a[:n]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// bpeHeap is HF's merge_all over the initial symbols syms: a linked list of symbols and a heap
// of candidate merges.
func (e *bpeScratch) bpeHeap(t *tables, syms []uint32) []uint32 {
	n := len(syms)
	next := append(e.next[:0], make([]int32, n)...)
	prev := append(e.prev[:0], make([]int32, n)...)
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	next[n-1] = -1
	h := e.h[:0]
	for i := 0; i+1 < n; i++ {
		if r, x := t.merge(syms[i], syms[i+1]); r != noRank {
			h = append(h, mergeCand{r, int32(i), x})
		}
	}
	h.init()
	alive := func(i int32) bool { return prev[i] != -2 }
	for len(h) > 0 {
		top := h.pop()
		p := top.pos
		if !alive(p) || next[p] < 0 {
			continue
		}
		q := next[p]
		if r, x := t.merge(syms[p], syms[q]); r == noRank || x != top.result {
			continue // stale: the pair at p changed since this candidate was queued
		}
		syms[p] = top.result
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		prev[q] = -2 // dead
		if pp := prev[p]; pp >= 0 {
			if r, x := t.merge(syms[pp], syms[p]); r != noRank {
				h.push(mergeCand{r, pp, x})
			}
		}
		if nx := next[p]; nx >= 0 {
			if r, x := t.merge(syms[p], syms[nx]); r != noRank {
				h.push(mergeCand{r, p, x})
			}
		}
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	e.syms, e.next, e.prev, e.h = syms, next, prev, h
	return out
}
