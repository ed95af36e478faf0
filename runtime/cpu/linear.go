package cpu

import (
	"github.com/anepack/anepack/runtime/kernels"
)

// output is one linear layer's share of a fused job:
//
//	y[t*ldy + col + r] = x[t]·w[r] + bias[r]   for t < n, r < w.Rows
//
// so several layers can write side by side into one matrix (the LM head chunks into the logits).
type output struct {
	w        *weight
	bias     []float32 // nil for none
	y        []float32
	ldy, col int
	first    int // the first row of this output in the job's concatenated row range
}

// maxOutputs bounds the layers of one job (Q, K, V; or the LM head's row chunks: a
// 262144-token vocabulary in 32000-row chunks has 9).
const maxOutputs = 16

// prefillGrain is the most weight rows a prefill work item multiplies: a multiple of the
// kernels' GEMM tile heights (3 rows on AVX2, 4 on AVX-512 and NEON), small enough that the
// item's [n, grain] result fits in L2.
const prefillGrain = 48

// minPrefillGrain is the fewest rows of a prefill work item (one AVX-512 or NEON panel row
// block of 3 tiles): on many cores a 896-row projection still splits into enough items.
const minPrefillGrain = 12

// maxDecodeGrain bounds the rows of one decode work item (a multiple of 4).
const maxDecodeGrain = 4096

// maxAMXGrain bounds the rows of an AMX prefill work item (kernels.AMXItemRows) whose results
// go through scratch (a gated MLP's gate and up); in-place products have no bound.
const maxAMXGrain = 192

// runner computes linear layers that share one input as a single parallel job over the
// concatenation of their output rows, so Q, K and V (or gate and up) cost one wake-up of the
// worker pool instead of three. A projector keeps one runner for every job it runs; the job's
// func value and the scratch are built once, so a job allocates nothing.
type runner struct {
	pool *kernels.Pool
	fn   func(slot, lo, hi int)
	// scratch holds one buffer per pool slot for prefill results before they are scattered
	// (and for the up projection of a gated MLP); a work item uses its slot's.
	scratch [][]float32
	// amxGrain bounds the rows of an AMX prefill work item: maxAMXGrain where this machine
	// runs AMX (the scratch is sized for it), else prefillGrain.
	amxGrain int

	// act and actY are the current elementwise activation job (activate); actFn is its
	// method value, made once so that a call allocates nothing.
	act   func(dst, x []float32)
	actY  []float32
	actFn func(lo, hi int)

	// The current job.
	x     []float32 // [n, cols]
	n     int
	outs  [maxOutputs]output
	nout  int
	gated func(dst, gate, up []float32) // when set: outs[0] is gate, outs[1] up; y = act(gate)*up goes to outs[0].y
	// in is x quantized once per job, in each form that the job's quantized weights read (int8
	// for q4, int16 for q8: a job may mix them, and float weights, if a bundle does): every
	// work item's products read it (the kernels only read it).
	in preparedInput
}

// newRunner returns a runner over pool with scratch for batch tokens; amxFor (nil: never)
// says which inputs its fp16 and q8 products take to AMX (kernels.UseAMX).
func newRunner(pool *kernels.Pool, batch int, amxFor func(n int) bool) *runner {
	r := &runner{pool: pool, scratch: make([][]float32, pool.Threads()), amxGrain: prefillGrain}
	r.in.pool, r.in.amx = pool, amxFor
	if amxFor != nil && amxFor(batch) {
		r.amxGrain = maxAMXGrain
	}
	for i := range r.scratch {
		// A prefill item holds two [batch, grain] results; a decode item one GEMV result of up
		// to maxDecodeGrain rows.
		r.scratch[i] = make([]float32, max(2*batch*max(prefillGrain, r.amxGrain), maxDecodeGrain))
	}
	r.fn, r.actFn = r.run, r.runAct
	return r
}

// activationGrain is the elements per work item of activate: enough to amortize a work item,
// small enough to split a prefill's [n, intermediate] activations over every thread.
const activationGrain = 8192

// activate applies act to y in place, in parallel over the pool (a plain MLP's activation of
// [n, intermediate] values, GPT-2's gelu_new, is otherwise a serial stretch of every prefill).
func (r *runner) activate(act func(dst, x []float32), y []float32) {
	r.act, r.actY = act, y
	r.pool.Parallel(len(y), activationGrain, r.actFn)
	r.act, r.actY = nil, nil
}

// runAct is one work item of activate.
func (r *runner) runAct(lo, hi int) { r.act(r.actY[lo:hi], r.actY[lo:hi]) }

// add appends an output to the current job.
func (r *runner) add(w *weight, bias, y []float32, ldy, col int) {
	first := 0
	if r.nout > 0 {
		prev := &r.outs[r.nout-1]
		first = prev.first + prev.w.Rows
	}
	r.outs[r.nout] = output{w: w, bias: bias, y: y, ldy: ldy, col: col, first: first}
	r.nout++
}

// linear computes every output added since the last call, for the n tokens of x.
func (r *runner) linear(x []float32, n int) {
	last := &r.outs[r.nout-1]
	r.x, r.n, r.gated = x, n, nil
	r.quantizeInput()
	r.parallel(last.first + last.w.Rows)
	r.reset()
}

// quantizeInput quantizes the job's input once per form its quantized weights read. anepack
// packs every member of a fused group, and every chunk of an LM head, in one format, but a
// bundle's manifest gives each tensor its own dtype and the runtime accepts any mix (a q8
// V or down projection in a q4 model, as llama.cpp's mixed types keep, would be one), so each
// output is checked.
func (r *runner) quantizeInput() {
	r.in.reset()
	for i := range r.outs[:r.nout] {
		r.in.prepare(r.outs[i].w, r.x, r.n)
	}
}

// gatedMLP computes y[t*rows+r] = act(x[t]·gate[r] + gb[r]) * (x[t]·up[r] + ub[r]), the gated
// MLP before the down projection, in one job (the biases are nil when the family has
// none); act (kernels.SwiGLU, kernels.GeGLU) is applied to each work item's rows as soon as both
// products are done.
func (r *runner) gatedMLP(y, x []float32, n int, gate, up *weight, gb, ub []float32, act func(dst, gate, up []float32)) {
	r.outs[0] = output{w: gate, bias: gb, y: y, ldy: gate.Rows}
	r.outs[1] = output{w: up, bias: ub}
	r.nout, r.x, r.n, r.gated = 2, x, n, act
	r.quantizeInput()
	r.parallel(gate.Rows)
	r.reset()
}

func (r *runner) reset() {
	r.x, r.nout, r.gated = nil, 0, nil
	r.outs = [maxOutputs]output{}
}

// grain picks the rows per work item: for decode about 8 items per thread (a busy core takes
// fewer), in multiples of the GEMV's 4-row block; for prefill about 4 items per thread, from
// minPrefillGrain to prefillGrain rows in multiples of 12 (whole tiles of either height), or
// on AMX as kernels.AMXItemRows says, up to r.amxGrain where the results go through scratch.
// On 16 threads a fixed 48 rows left 19 items for the 896-row projections: a third of the
// threads idle for the last round.
func (r *runner) grain(rows int) int {
	if r.in.hasAMX() {
		bound := r.amxGrain
		if r.inPlace() {
			bound = rows
		}
		return kernels.AMXItemRows(rows, r.outs[0].w.Cols, r.n, r.pool.Threads(), bound)
	}
	if r.n > 1 {
		g := rows / (4 * r.pool.Threads())
		return min(max(g, minPrefillGrain), prefillGrain) / 12 * 12
	}
	g := rows / (8 * r.pool.Threads())
	g = min(max(g, 16), maxDecodeGrain)
	return (g + 3) &^ 3
}

// parallel runs the job's rows over the pool in work items of r.grain rows; a prefill on the
// vector units cuts its last round into items of minPrefillGrain (Pool.ParallelSlotsTail).
// AMX items are sized to the threads already (kernels.AMXItemRows).
func (r *runner) parallel(rows int) {
	if r.n > 1 && !r.in.hasAMX() {
		r.pool.ParallelSlotsTail(rows, r.grain(rows), minPrefillGrain, r.fn)
		return
	}
	r.pool.ParallelSlots(rows, r.grain(rows), r.fn)
}

// inPlace reports whether every output of a non-gated job is computed in place from the
// prepared input (preparedInput.reads), so that its work items need no scratch and may be of any size.
func (r *runner) inPlace() bool {
	if r.gated != nil {
		return false
	}
	for i := range r.outs[:r.nout] {
		if !r.in.reads(r.outs[i].w) {
			return false
		}
	}
	return true
}

// run is the work item: rows [lo, hi) of the concatenated outputs, with slot's scratch.
func (r *runner) run(slot, lo, hi int) {
	if r.gated != nil {
		r.runGated(r.scratch[slot], lo, hi)
		return
	}
	for i := range r.outs[:r.nout] {
		o := &r.outs[i]
		a, b := max(lo, o.first)-o.first, min(hi, o.first+o.w.Rows)-o.first
		if a >= b {
			continue
		}
		if r.in.reads(o.w) {
			// The quantized and AMX kernels write y[t*ldy + j] in place: no scratch, no copy.
			o.w.mulActs(o.y[o.col+a:], o.ldy, &r.in, a, b)
			if o.bias != nil {
				for t := 0; t < r.n; t++ {
					kernels.Add(o.y[t*o.ldy+o.col+a:t*o.ldy+o.col+b], o.bias[a:b])
				}
			}
			continue
		}
		if r.n == 1 {
			y := o.y[o.col+a : o.col+b]
			o.w.matVec(y, r.x, a, b)
			if o.bias != nil {
				kernels.Add(y, o.bias[a:b])
			}
			continue
		}
		tmp := r.scratch[slot]
		rows := b - a
		o.w.matMul(tmp[:r.n*rows], r.x, r.n, a, b)
		for t := 0; t < r.n; t++ {
			y := o.y[t*o.ldy+o.col+a : t*o.ldy+o.col+b]
			copy(y, tmp[t*rows:(t+1)*rows])
			if o.bias != nil {
				kernels.Add(y, o.bias[a:b])
			}
		}
	}
}

// runGated is the work item of gatedMLP: rows [lo, hi) of gate and up, with tmp as scratch.
func (r *runner) runGated(tmp []float32, lo, hi int) {
	gate, up := &r.outs[0], &r.outs[1]
	rows := hi - lo
	if r.n == 1 {
		y := gate.y[lo:hi]
		u := tmp[:rows]
		r.product(gate.w, y, lo, hi)
		r.product(up.w, u, lo, hi)
		addBias(y, gate.bias, lo, hi)
		addBias(u, up.bias, lo, hi)
		r.gated(y, y, u)
	} else {
		g, u := tmp[:r.n*rows], tmp[r.n*rows:2*r.n*rows]
		r.product(gate.w, g, lo, hi)
		r.product(up.w, u, lo, hi)
		for t := 0; t < r.n; t++ {
			gt, ut := g[t*rows:(t+1)*rows], u[t*rows:(t+1)*rows]
			addBias(gt, gate.bias, lo, hi)
			addBias(ut, up.bias, lo, hi)
			r.gated(gate.y[t*gate.ldy+lo:t*gate.ldy+hi], gt, ut)
		}
	}
}

// product computes rows [lo, hi) of w for the job's tokens into y, [n, hi-lo] densely: from
// the job's quantized input for a quantized weight, else with the float kernels.
func (r *runner) product(w *weight, y []float32, lo, hi int) {
	switch {
	case r.in.reads(w):
		w.mulActs(y, hi-lo, &r.in, lo, hi)
	case r.n == 1:
		w.matVec(y, r.x, lo, hi)
	default:
		w.matMul(y, r.x, r.n, lo, hi)
	}
}

// addBias adds rows [lo, hi) of bias to y, when there is a bias.
func addBias(y, bias []float32, lo, hi int) {
	if bias != nil {
		kernels.Add(y, bias[lo:hi])
	}
}
