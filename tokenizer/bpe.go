package tokenizer

import "container/heap"

// BPE merging. HF's Word::merge_all repeatedly applies the merge with the lowest rank, the
// leftmost one among equal ranks (a heap ordered by (rank, position) whose stale entries are
// skipped). Short words use an equivalent O(n²) scan over a compact array, which beats a heap
// for the few symbols most words have; long words use the heap. bpe_test.go checks both agree.

const noRank = 0xFFFFFFFF

// smallWordMax is the longest word (in bytes) merged by the array scan.
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

// bpe returns the ids of word w (len >= 2); the slice is scratch owned by e.
func (e *bpeScratch) bpe(t *tables, w string) []uint32 {
	if len(w) > smallWordMax {
		return e.bpeHeap(t, w)
	}
	syms := e.syms[:0]
	for i := 0; i < len(w); i++ {
		syms = append(syms, t.byteIDs[w[i]])
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

type mergeHeap []mergeCand

// Len, Less, Swap, Push and Pop implement heap.Interface, ordered by (rank, position).
func (h mergeHeap) Len() int { return len(h) }

// Less orders by rank, then by position.
func (h mergeHeap) Less(i, j int) bool {
	return h[i].rank < h[j].rank || (h[i].rank == h[j].rank && h[i].pos < h[j].pos)
}

// Swap swaps two candidates.
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push adds a candidate.
func (h *mergeHeap) Push(x any) { *h = append(*h, x.(mergeCand)) }

// Pop removes the last candidate.
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// bpeHeap is HF's merge_all: a linked list of symbols and a heap of candidate merges.
func (e *bpeScratch) bpeHeap(t *tables, w string) []uint32 {
	n := len(w)
	syms := append(e.syms[:0], make([]uint32, n)...)
	next := append(e.next[:0], make([]int32, n)...)
	prev := append(e.prev[:0], make([]int32, n)...)
	for i := 0; i < n; i++ {
		syms[i] = t.byteIDs[w[i]]
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
	heap.Init(&h)
	alive := func(i int32) bool { return prev[i] != -2 }
	for h.Len() > 0 {
		top := heap.Pop(&h).(mergeCand)
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
				heap.Push(&h, mergeCand{r, pp, x})
			}
		}
		if nx := next[p]; nx >= 0 {
			if r, x := t.merge(syms[p], syms[nx]); r != noRank {
				heap.Push(&h, mergeCand{r, p, x})
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
