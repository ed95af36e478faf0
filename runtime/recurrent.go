package runtime

import (
	"math"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// maxSnapshots bounds the snapshots a sequence keeps of its Gated DeltaNet layers' state. Each
// is one copy of the fixed-size state (Qwen3.5-2B: 19.3 MiB); chat turns and the server's
// prompt cache need the latest one or two.
const maxSnapshots = 4

// linearState is one sequence's share of the Gated DeltaNet layers: their recurrent states and
// convolution histories, the scratch of a batch, and snapshots to resume from.
//
// A KV cache can be cut back to any earlier position; a recurrent state only holds the present.
// So the state keeps snapshots: every Forward of two or more tokens (a prompt, or a chunk of
// one) records the state as it was before its last token, the position a session resumes from
// when the next prompt repeats this one (it recomputes that token for its logits) or continues
// it with other tokens (a chat turn whose reply the template renders differently, a server
// request sharing a cached prompt). Decode steps take none: a copy per token would cost more
// than the step. The last maxSnapshots are kept; position 0 (all zeros) needs none.
type linearState struct {
	conv, value   int // channels of the convolution (q | k | v) and of the value heads
	headLen       int // floats of one value head's recurrent state (kernels.StateLen)
	stateLen      int // floats of one layer's recurrent state: value heads · headLen
	tailLen       int // floats of one layer's convolution history: (kernel-1) · conv
	qScale        float32
	rec           []float32 // every DeltaNet layer's state then history, layer after layer
	live          int       // the position rec holds; -1 after a failed pass
	win           []float32 // batch scratch: the convolution's window
	mixed         []float32 // the convolution's output (q | k | v)
	decay, beta   []float32 // [batch, value heads] e^g and β
	scratch       []float32 // [value heads, value_dim] for the heads' recurrence
	heads         []kernels.DeltaHead
	cfg           *arch.Config
	pool          *kernels.Pool
	fn            func(lo, hi int)
	t0, t1        int // the tokens fn runs
	prepFn        func(lo, hi int)
	prep          *deltaNetLayer // the layer and input projections prepFn works on
	prepProj      []float32
	snaps         []snapshot // ascending positions, each <= live
	pending       snapshot   // being captured during the current Forward
	pendingAt     int        // its position, or -1
	pendingLayers int        // layers captured so far
	layers        int        // DeltaNet layers
}

// RecurrentStateBytes returns the size of one sequence's Gated DeltaNet state: per DeltaNet
// layer, value_heads recurrent states of key_dim·value_dim float32 values (and a scale each,
// kernels.DeltaHead) and (kernel-1)·channels values of convolution history, whatever the
// context (0 without such layers). Each snapshot a sequence keeps costs as much again, at most
// maxSnapshots of them, allocated on first use.
func (d *Decoder) RecurrentStateBytes() int {
	c, n := d.cfg, 0
	for _, L := range d.layers {
		if L.linear != nil {
			n += c.LinearNumValueHeads*kernels.StateLen(c.LinearKeyHeadDim, c.LinearValueHeadDim) + (c.LinearConvKernelDim-1)*c.LinearConvDim()
		}
	}
	return 4 * n
}

// snapshot is the whole of rec at one position.
type snapshot struct {
	pos  int
	data []float32
}

func newLinearState(d *Decoder, batch int) *linearState {
	c := d.cfg
	hv, dk, dv, k := c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, c.LinearConvKernelDim
	ls := &linearState{conv: c.LinearConvDim(), value: c.LinearValueDim(), headLen: kernels.StateLen(dk, dv),
		qScale: float32(1 / math.Sqrt(float64(dk))), cfg: c, pool: d.pool, pendingAt: -1}
	ls.prepFn = ls.prepare
	ls.stateLen = hv * ls.headLen
	ls.tailLen = (k - 1) * ls.conv
	for _, L := range d.layers {
		if L.linear != nil {
			ls.layers++
		}
	}
	ls.rec = make([]float32, ls.layers*(ls.stateLen+ls.tailLen))
	ls.win = make([]float32, (k-1+batch)*ls.conv)
	ls.mixed = make([]float32, batch*ls.conv)
	ls.decay, ls.beta = make([]float32, batch*hv), make([]float32, batch*hv)
	ls.scratch, ls.heads = make([]float32, hv*dv), make([]kernels.DeltaHead, hv)
	ls.fn = func(lo, hi int) {
		for h := lo; h < hi; h++ {
			ls.heads[h].Run(ls.t0, ls.t1)
		}
	}
	return ls
}

// bytes returns the memory of the recurrent state and its snapshots (pending one included).
func (ls *linearState) bytes() int64 {
	n := len(ls.rec) + len(ls.pending.data)
	for _, sn := range ls.snaps {
		n += len(sn.data)
	}
	return int64(n) * 4
}

// layer returns DeltaNet layer i's recurrent state and convolution history, in rec.
func (ls *linearState) layer(i int) (state, tail []float32) {
	at := i * (ls.stateLen + ls.tailLen)
	return ls.rec[at : at+ls.stateLen], ls.rec[at+ls.stateLen : at+ls.stateLen+ls.tailLen]
}

// run advances every head through tokens [t0, t1) of the batch, split over the pool.
func (ls *linearState) run(t0, t1 int) {
	if t0 < t1 {
		ls.t0, ls.t1 = t0, t1
		ls.pool.Parallel(len(ls.heads), 1, ls.fn)
	}
}

// resumeAt returns the largest position p <= pos the state can continue from: its present
// position, 0, or a snapshot's.
func (ls *linearState) resumeAt(pos int) int {
	if pos == ls.live || pos == 0 {
		return pos
	}
	best := 0
	for _, sn := range ls.snaps {
		if sn.pos <= pos {
			best = sn.pos
		}
	}
	return best
}

// begin prepares a Forward of n tokens at pos (which resumeAt allows): it restores the state
// of pos when that is not the present one, forgets the snapshots beyond pos (they belong to
// the tail that is being replaced), and, for two or more tokens, readies the snapshot of
// position pos+n-1.
func (ls *linearState) begin(pos, n int) {
	if pos != ls.live {
		if pos == 0 {
			clear(ls.rec)
		} else {
			for _, sn := range ls.snaps {
				if sn.pos == pos {
					copy(ls.rec, sn.data)
				}
			}
		}
		ls.live = pos
	}
	keep := 0
	for _, sn := range ls.snaps {
		if sn.pos <= pos {
			ls.snaps[keep] = sn
			keep++
		}
	}
	ls.snaps = ls.snaps[:keep]
	ls.pendingAt = -1
	if n < 2 {
		return
	}
	if ls.pending.data == nil {
		if len(ls.snaps) == maxSnapshots {
			// Reuse the oldest snapshot's memory.
			ls.pending.data = ls.snaps[0].data
			ls.snaps = append(ls.snaps[:0], ls.snaps[1:]...)
		} else {
			ls.pending.data = make([]float32, len(ls.rec))
		}
	}
	ls.pendingAt, ls.pending.pos, ls.pendingLayers = pos+n-1, pos+n-1, 0
}

// capture copies DeltaNet layer i's state and convolution history at the pending position.
func (ls *linearState) capture(i int, state, tail []float32) {
	at := i * (ls.stateLen + ls.tailLen)
	copy(ls.pending.data[at:at+ls.stateLen], state)
	copy(ls.pending.data[at+ls.stateLen:at+ls.stateLen+ls.tailLen], tail)
	ls.pendingLayers++
}

// done records that a pass ending at position end ran through every layer: the state is now
// that of end, and the pending snapshot is complete once every layer has captured it.
func (ls *linearState) done(end int) {
	ls.live = end
	if ls.pendingAt >= 0 && ls.pendingLayers == ls.layers {
		ls.snaps = append(ls.snaps, ls.pending)
		ls.pending, ls.pendingAt = snapshot{}, -1
	}
}

// fail records that a pass stopped part of the way through the layers: the present state is
// inconsistent and the sequence can only resume from a snapshot (or 0).
func (ls *linearState) fail() {
	ls.live, ls.pendingAt = -1, -1
}
