package cpu

import (
	"github.com/anepack/anepack/runtime/kernels"
)

// output is one linear layer's share of a fused dispatch:
//
//	y[t*ldy + col + r] = x[t]·w[r] + bias[r]   for t < n, r < w.Rows
//
// so several layers can write side by side into one matrix (the LM head chunks into the logits).
type output struct {
	w        *weight
	bias     []float32 // nil for none
	y        []float32
	ldy, col int
	first    int // the first row of this output in the dispatch's concatenated row range
}

// maxOutputs bounds the layers of one dispatch (Q, K, V; or the LM head's row chunks: a
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

// dispatch computes linear layers that share one input as a single parallel job over the
// concatenation of their output rows, so Q, K and V (or gate and up) cost one wake-up of the
// worker pool instead of three. The job's func value is built once, so a dispatch allocates
// nothing.
type dispatch struct {
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

// newDispatch returns a dispatch over pool with scratch for batch tokens; amxFor (nil: never)
// says which inputs its fp16 and q8 products take to AMX (kernels.UseAMX).
func newDispatch(pool *kernels.Pool, batch int, amxFor func(n int) bool) *dispatch {
	d := &dispatch{pool: pool, scratch: make([][]float32, pool.Threads()), amxGrain: prefillGrain}
	d.in.pool, d.in.amx = pool, amxFor
	if amxFor != nil && amxFor(batch) {
		d.amxGrain = maxAMXGrain
	}
	for i := range d.scratch {
		// A prefill item holds two [batch, grain] results; a decode item one GEMV result of up
		// to maxDecodeGrain rows.
		d.scratch[i] = make([]float32, max(2*batch*max(prefillGrain, d.amxGrain), maxDecodeGrain))
	}
	d.fn, d.actFn = d.run, d.runAct
	return d
}

// activationGrain is the elements per work item of activate: enough to amortize a work item,
// small enough to split a prefill's [n, intermediate] activations over every thread.
const activationGrain = 8192

// activate applies act to y in place, in parallel over the pool (a plain MLP's activation of
// [n, intermediate] values, GPT-2's gelu_new, is otherwise a serial stretch of every prefill).
func (d *dispatch) activate(act func(dst, x []float32), y []float32) {
	d.act, d.actY = act, y
	d.pool.Parallel(len(y), activationGrain, d.actFn)
	d.act, d.actY = nil, nil
}

// runAct is one work item of activate.
func (d *dispatch) runAct(lo, hi int) { d.act(d.actY[lo:hi], d.actY[lo:hi]) }

// add appends an output to the current job.
func (d *dispatch) add(w *weight, bias, y []float32, ldy, col int) {
	first := 0
	if d.nout > 0 {
		prev := &d.outs[d.nout-1]
		first = prev.first + prev.w.Rows
	}
	d.outs[d.nout] = output{w: w, bias: bias, y: y, ldy: ldy, col: col, first: first}
	d.nout++
}

// linear computes every output added since the last call, for the n tokens of x.
func (d *dispatch) linear(x []float32, n int) {
	last := &d.outs[d.nout-1]
	d.x, d.n, d.gated = x, n, nil
	d.quantizeInput()
	d.parallel(last.first + last.w.Rows)
	d.reset()
}

// quantizeInput quantizes the job's input once per form its quantized weights read. anepack
// packs every member of a fused group, and every chunk of an LM head, in one format, but a
// bundle's manifest gives each tensor its own dtype and the runtime accepts any mix (a q8
// V or down projection in a q4 model, as llama.cpp's mixed types keep, would be one), so each
// output is checked.
func (d *dispatch) quantizeInput() {
	d.in.reset()
	for i := range d.outs[:d.nout] {
		d.in.prepare(d.outs[i].w, d.x, d.n)
	}
}

// gatedMLP computes y[t*rows+r] = act(x[t]·gate[r] + gb[r]) * (x[t]·up[r] + ub[r]), the gated
// MLP before the down projection, in one dispatch (the biases are nil when the family has
// none); act (kernels.SwiGLU, kernels.GeGLU) is applied to each work item's rows as soon as both
// products are done.
func (d *dispatch) gatedMLP(y, x []float32, n int, gate, up *weight, gb, ub []float32, act func(dst, gate, up []float32)) {
	d.outs[0] = output{w: gate, bias: gb, y: y, ldy: gate.Rows}
	d.outs[1] = output{w: up, bias: ub}
	d.nout, d.x, d.n, d.gated = 2, x, n, act
	d.quantizeInput()
	d.parallel(gate.Rows)
	d.reset()
}

func (d *dispatch) reset() {
	d.x, d.nout, d.gated = nil, 0, nil
	d.outs = [maxOutputs]output{}
}

// grain picks the rows per work item: for decode about 8 items per thread (a busy core takes
// fewer), in multiples of the GEMV's 4-row block; for prefill about 4 items per thread, from
// minPrefillGrain to prefillGrain rows in multiples of 12 (whole tiles of either height), or
// on AMX as kernels.AMXItemRows says, up to d.amxGrain where the results go through scratch.
// On 16 threads a fixed 48 rows left 19 items for the 896-row projections: a third of the
// threads idle for the last round.
func (d *dispatch) grain(rows int) int {
	if d.in.hasAMX() {
		bound := d.amxGrain
		if d.inPlace() {
			bound = rows
		}
		return kernels.AMXItemRows(rows, d.outs[0].w.Cols, d.n, d.pool.Threads(), bound)
	}
	if d.n > 1 {
		g := rows / (4 * d.pool.Threads())
		return min(max(g, minPrefillGrain), prefillGrain) / 12 * 12
	}
	g := rows / (8 * d.pool.Threads())
	g = min(max(g, 16), maxDecodeGrain)
	return (g + 3) &^ 3
}

// parallel runs the job's rows over the pool in work items of d.grain rows; a prefill on the
// vector units cuts its last round into items of minPrefillGrain (Pool.ParallelSlotsTail).
// AMX items are sized to the threads already (kernels.AMXItemRows).
func (d *dispatch) parallel(rows int) {
	if d.n > 1 && !d.in.hasAMX() {
		d.pool.ParallelSlotsTail(rows, d.grain(rows), minPrefillGrain, d.fn)
		return
	}
	d.pool.ParallelSlots(rows, d.grain(rows), d.fn)
}

// inPlace reports whether every output of a non-gated job is computed in place from the
// prepared input (preparedInput.reads), so that its work items need no scratch and may be of any size.
func (d *dispatch) inPlace() bool {
	if d.gated != nil {
		return false
	}
	for i := range d.outs[:d.nout] {
		if !d.in.reads(d.outs[i].w) {
			return false
		}
	}
	return true
}

// run is the work item: rows [lo, hi) of the concatenated outputs, with slot's scratch.
func (d *dispatch) run(slot, lo, hi int) {
	if d.gated != nil {
		d.runGated(d.scratch[slot], lo, hi)
		return
	}
	for i := range d.outs[:d.nout] {
		o := &d.outs[i]
		a, b := max(lo, o.first)-o.first, min(hi, o.first+o.w.Rows)-o.first
		if a >= b {
			continue
		}
		if d.in.reads(o.w) {
			// The quantized and AMX kernels write y[t*ldy + j] in place: no scratch, no copy.
			o.w.mulActs(o.y[o.col+a:], o.ldy, &d.in, a, b)
			if o.bias != nil {
				for t := 0; t < d.n; t++ {
					kernels.Add(o.y[t*o.ldy+o.col+a:t*o.ldy+o.col+b], o.bias[a:b])
				}
			}
			continue
		}
		if d.n == 1 {
			y := o.y[o.col+a : o.col+b]
			o.w.matVec(y, d.x, a, b)
			if o.bias != nil {
				kernels.Add(y, o.bias[a:b])
			}
			continue
		}
		tmp := d.scratch[slot]
		rows := b - a
		o.w.matMul(tmp[:d.n*rows], d.x, d.n, a, b)
		for t := 0; t < d.n; t++ {
			y := o.y[t*o.ldy+o.col+a : t*o.ldy+o.col+b]
			copy(y, tmp[t*rows:(t+1)*rows])
			if o.bias != nil {
				kernels.Add(y, o.bias[a:b])
			}
		}
	}
}

// runGated is the work item of gatedMLP: rows [lo, hi) of gate and up, with tmp as scratch.
func (d *dispatch) runGated(tmp []float32, lo, hi int) {
	gate, up := &d.outs[0], &d.outs[1]
	rows := hi - lo
	if d.n == 1 {
		y := gate.y[lo:hi]
		u := tmp[:rows]
		d.product(gate.w, y, lo, hi)
		d.product(up.w, u, lo, hi)
		addBias(y, gate.bias, lo, hi)
		addBias(u, up.bias, lo, hi)
		d.gated(y, y, u)
	} else {
		g, u := tmp[:d.n*rows], tmp[d.n*rows:2*d.n*rows]
		d.product(gate.w, g, lo, hi)
		d.product(up.w, u, lo, hi)
		for t := 0; t < d.n; t++ {
			gt, ut := g[t*rows:(t+1)*rows], u[t*rows:(t+1)*rows]
			addBias(gt, gate.bias, lo, hi)
			addBias(ut, up.bias, lo, hi)
			d.gated(gate.y[t*gate.ldy+lo:t*gate.ldy+hi], gt, ut)
		}
	}
}

// product computes rows [lo, hi) of w for the job's tokens into y, [n, hi-lo] densely: from
// the job's quantized input for a quantized weight, else with the float kernels.
func (d *dispatch) product(w *weight, y []float32, lo, hi int) {
	switch {
	case d.in.reads(w):
		w.mulActs(y, hi-lo, &d.in, lo, hi)
	case d.n == 1:
		w.matVec(y, d.x, lo, hi)
	default:
		w.matMul(y, d.x, d.n, lo, hi)
	}
}

// addBias adds rows [lo, hi) of bias to y, when there is a bias.
func addBias(y, bias []float32, lo, hi int) {
	if bias != nil {
		kernels.Add(y, bias[lo:hi])
	}
}
