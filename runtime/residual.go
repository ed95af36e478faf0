package runtime

import "github.com/anepack/anepack/runtime/kernels"

// residualStep is the row-wise work between two blocks of a layer, fused so that each row is
// read once: tmp = post-norm(tmp) (Gemma's post-attention and post-MLP norms, where the family
// has them), x += tmp (the residual), xn = next-norm(x) (the next block's input norm; x itself
// in a family without pre-norms). Rows are
// independent, so a prefill splits them over the pool. On one thread these steps are about 1.5%
// of a 128-token prefill; run on one goroutine while the pool's other threads waited, they were
// most of the serial work that kept 16-thread prefill waiting (commit 91b8e80).
type residualStep struct {
	d          *Decoder
	x, xn, tmp []float32 // the workspace's [rows, hidden] buffers
	post, next norm      // no weight: no norm
	add        bool
	fn         func(lo, hi int) // run, bound once so that a pool call does not allocate
}

// minParallelRows is the fewest rows (tokens) that row-wise work splits over the pool: a decode
// step's handful costs less than waking the workers.
const minParallelRows = 16

// parallelRows runs fn over rows [0, n): split over the pool for a prefill, on the calling goroutine
// for fewer than minParallelRows.
func (d *Decoder) parallelRows(n int, fn func(lo, hi int)) {
	threads := d.pool.Threads()
	if n < minParallelRows || threads == 1 {
		fn(0, n)
		return
	}
	// About two ranges per thread: enough to even out a slow core, few enough that each range
	// outweighs the cost of claiming it.
	d.pool.Parallel(n, max(1, n/(2*threads)), fn)
}

// residual runs the step over rows rows of ws: post on tmp, then tmp added to x when add, then
// next of x into xn.
func (d *Decoder) residual(ws *workspace, rows int, post norm, add bool, next norm) {
	st := &ws.step
	st.post, st.add, st.next = post, add, next
	d.parallelRows(rows, st.fn)
}

// run applies the step to rows [lo, hi).
func (st *residualStep) run(lo, hi int) {
	d, w := st.d, st.d.cfg.HiddenSize
	for r := lo; r < hi; r++ {
		x, t := st.x[r*w:(r+1)*w], st.tmp[r*w:(r+1)*w]
		if st.post.w != nil {
			d.normRow(t, t, st.post)
		}
		if st.add {
			kernels.Add(x, t)
		}
		if st.next.w != nil {
			d.normRow(st.xn[r*w:(r+1)*w], x, st.next)
		} else if !d.prenorm {
			copy(st.xn[r*w:(r+1)*w], x) // the next block reads x itself (OLMo)
		}
	}
}
