package runtime

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// A sparse MLP block (a mixture of experts, arch.Experts) runs in two halves. The decoder
// routes: the router's logits of each token (float32 weights, float32 products), the softmax,
// the num_experts_per_tok most probable experts and their weights, and the same choices sorted
// by expert (Routes). The backend's projector then runs the experts (Projector.Experts): each
// chosen expert once for all the tokens of the pass that chose it, reading only the rows of the
// experts some token chose.

// Routes are the experts a sparse MLP block's router chose for the N tokens of a pass, and their
// weights, in two orders. By token: token t's j-th expert (the most probable first) is
// Expert[t·K+j], weighted Weight[t·K+j]. By expert: the choices of expert e are the indices
// Order[Start[e]:Start[e+1]] into Expert and Weight, in token order (the token is index / K).
// A backend runs each expert once: it gathers the rows of the tokens that chose it, runs the
// expert's MLP on them as one batch, and adds each output, times its weight, to its token's row.
type Routes struct {
	N, K   int
	Expert []int32   // [N·K]
	Weight []float32 // [N·K]
	Start  []int32   // [experts+1]
	Order  []int32   // [N·K]
}

// router is a workspace's routing of one sparse layer: the router's logits and the Routes of up
// to the workspace's rows tokens.
type router struct {
	d      *Decoder
	x      []float32 // the MLP norm's output, [n, hidden]
	w      []float32 // the layer's router weight, [experts, hidden]
	logits []float32 // [rows, experts]: the logits, then the probabilities
	next   []int32   // [experts] counting sort cursors
	routes Routes
	fn     func(lo, hi int) // run, bound once so that a pool call does not allocate
}

// newRouter allocates the routing of rows tokens.
func (d *Decoder) newRouter(rows int) *router {
	e, k := d.cfg.NumExperts, d.cfg.NumExpertsPerTok
	rt := &router{d: d, logits: make([]float32, rows*e), next: make([]int32, e),
		routes: Routes{K: k, Expert: make([]int32, rows*k), Weight: make([]float32, rows*k),
			Start: make([]int32, e+1), Order: make([]int32, rows*k)}}
	rt.fn = rt.run
	return rt
}

// checkExperts checks what the decoder needs of a family's sparse MLP block.
func checkExperts(m *Model) error {
	x, c := m.Family.Experts, m.Config
	switch {
	case x == nil:
		return nil
	case x.Routing != arch.SoftmaxTopK:
		return fmt.Errorf("%s: expert routing %d is not implemented", m.Name, x.Routing)
	case m.Family.MLP != arch.GatedMLP:
		return fmt.Errorf("%s: experts of a plain MLP are not implemented; expected a gated MLP", m.Name)
	case c.NumExpertsPerTok > c.NumExperts: // arch.Validate refuses it; the sort below relies on it
		return fmt.Errorf("%s: %d experts per token of %d", m.Name, c.NumExpertsPerTok, c.NumExperts)
	}
	return nil
}

// experts runs layer l's sparse MLP block on ws.xn's rows rows into ws.tmp: it routes each token,
// then runs the chosen experts through the projector.
func (d *Decoder) experts(l int, ws *workspace, rows int) error {
	h, e := d.cfg.HiddenSize, d.cfg.NumExperts
	rt := ws.router
	rt.x, rt.w, rt.routes.N = ws.xn[:rows*h], d.layers[l].router, rows
	if rows == 1 {
		// One token: its logits split over the pool (the same products, row by row, as
		// kernels.MatVecF32, so a token routes the same alone and in a batch).
		d.pool.MatVecF32(rt.logits[:e], rt.w, rt.x, e, h)
		rt.choose(0)
	} else {
		d.parallelRows(rows, rt.fn)
	}
	rt.routes.Sort(rt.next)
	err := ws.proj.Experts(l, d.gExperts, rt.x, rows, &rt.routes, ws.tmp[:rows*h])
	rt.x, rt.w = nil, nil
	return err
}

// run routes rows [lo, hi): each token's logits, then its choice.
func (rt *router) run(lo, hi int) {
	h, e := rt.d.cfg.HiddenSize, rt.d.cfg.NumExperts
	for t := lo; t < hi; t++ {
		kernels.MatVecF32(rt.logits[t*e:(t+1)*e], rt.w, rt.x[t*h:(t+1)*h], e, h)
		rt.choose(t)
	}
}

// choose turns token t's logits into its experts and weights, as Hugging Face's Qwen3-MoE
// router does in float32: the softmax over every expert, the K largest probabilities (the
// lower index first among equal ones), divided by their sum when norm_topk_prob is set.
func (rt *router) choose(t int) {
	e, k := rt.d.cfg.NumExperts, rt.routes.K
	p := rt.logits[t*e : (t+1)*e]
	kernels.Softmax(p)
	ids, ws := rt.routes.Expert[t*k:(t+1)*k], rt.routes.Weight[t*k:(t+1)*k]
	for j := range ids {
		best := -1
		for i, v := range p {
			if v != -1 && (best < 0 || v > p[best]) { // a chosen one is marked -1 (a NaN is taken last)
				best = i
			}
		}
		ids[j], ws[j] = int32(best), p[best]
		p[best] = -1
	}
	if rt.d.cfg.NormTopKProb {
		var sum float32
		for _, w := range ws {
			sum += w
		}
		for j := range ws {
			ws[j] /= sum
		}
	}
}

// Sort fills the by-expert order (Start, Order) from the by-token one (Expert, of N·K choices
// of experts below len(Start)-1): a counting sort, stable, so each expert's tokens stay in
// token order. next is scratch of len(Start)-1 values.
func (r *Routes) Sort(next []int32) {
	n := r.N * r.K
	clear(r.Start)
	for _, x := range r.Expert[:n] {
		r.Start[x+1]++
	}
	for i := 1; i < len(r.Start); i++ {
		r.Start[i] += r.Start[i-1]
	}
	copy(next, r.Start)
	for i, x := range r.Expert[:n] {
		r.Order[next[x]] = int32(i)
		next[x]++
	}
}
