package runtime

import (
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/runtime/kernels"
)

// attention is the attention block of layer l for the pass's rows: from the normed input ws.xn
// [rows, hidden] to o_proj's output in ws.tmp [rows, hidden], leaving each segment's keys and
// values in its state's cache. The projections run over all rows; RoPE, the cache and the
// attention itself per segment, each at its own positions.
func (d *Decoder) attention(l int, ws *workspace, segs []segment, rows int) error {
	c := d.cfg
	L := &d.layers[l]
	hd, heads, kvHeads := c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	qd := heads * hd
	stride := d.qkvOut
	qkv, att := ws.qkv[:rows*stride], ws.att[:rows*qd]
	// qkv[rows, q | k | v] = the QKV projections (+ biases).
	if err := ws.proj.Group(l, d.gQKV, ws.xn[:rows*c.HiddenSize], rows, qkv); err != nil {
		return err
	}
	window := 0
	if L.sliding {
		window = d.window
	}
	for _, sg := range segs {
		s, n, pos := sg.s, len(sg.tokens), sg.pos
		capacity := s.capacity[l]
		lo, hi := s.base[l], s.base[l]+kvHeads*capacity*hd // the layer's part of the cache
		rope := s.rope
		if L.sliding && s.ropeLocal != nil {
			rope = s.ropeLocal
		}
		if L.noRope {
			rope = nil
		}
		pr := &ws.prep
		pr.L, pr.row, pr.pos, pr.capacity, pr.rope = L, sg.row, pos, capacity, rope
		pr.keys, pr.values, pr.keys16, pr.values16 = nil, nil, nil, nil
		if s.keys16 != nil {
			pr.keys16, pr.values16 = s.keys16[lo:hi], s.values16[lo:hi]
		} else {
			pr.keys, pr.values = s.keys[lo:hi], s.values[lo:hi]
		}
		d.parallelRows(n, pr.fn)
		// att[n, heads*hd] = softmax(q·kᵀ·scale, causal, within the window)·v
		out, q := att[sg.row*qd:], qkv[sg.row*stride:]
		if s.keys16 != nil {
			s.attn.ComputeWindowF16(out, q, stride, pr.keys16, pr.values16, n, pos, capacity, window)
		} else {
			s.attn.ComputeWindow(out, q, stride, pr.keys, pr.values, n, pos, capacity, window)
		}
	}
	if d.gated {
		// att ·= sigmoid(gate)
		kernels.MulSigmoid(att, ws.gate[:rows*qd])
	}
	// out = o_proj(att)
	return ws.proj.Group(l, d.gO, att, rows, ws.tmp[:rows*c.HiddenSize])
}

// splitGates takes the output gates out of one token's q_proj output, where each head's query
// is followed by its gate ([heads][2·hd], Qwen3.5's layout): the gates go to gate
// ([heads·hd]) and the queries move together to the start of row, where attention reads them.
func splitGates(row, gate []float32, heads, hd int) {
	for h := 0; h < heads; h++ {
		copy(gate[h*hd:(h+1)*hd], row[(2*h+1)*hd:(2*h+2)*hd])
	}
	// Head h's query moves from 2h·hd down to h·hd: in increasing h nothing unread is overwritten.
	for h := 1; h < heads; h++ {
		copy(row[h*hd:(h+1)*hd], row[2*h*hd:(2*h+1)*hd])
	}
}

// tokenPrep is attention's work on each new token of a segment before attention proper: the
// output gates out of q (gated attention), q and k norms (when the family has them), RoPE at
// the token's position (not on a layer without RoPE) (the sliding layers' own tables where they have them), then k
// and v into the cache: cache[l][kvHead][slot of pos+i][hd], rounded to fp16 for CacheF16.
// Tokens are independent (a pass holds at most a ring's spare capacity, so no two share a
// slot), so a prefill splits them over the pool.
type tokenPrep struct {
	d                *Decoder
	ws               *workspace
	L                *decoderLayer
	row, pos         int       // the segment's first row and its position
	capacity         int       // cache slots per head of the layer
	keys, values     []float32 // the layer's cache: these, or the fp16 pair
	keys16, values16 []uint16
	rope             *kernels.Rope
	fn               func(lo, hi int) // run, bound once so that a pool call does not allocate
}

// run prepares the segment's tokens [lo, hi).
func (p *tokenPrep) run(lo, hi int) {
	d, c, L := p.d, p.d.cfg, p.L
	hd, heads, kvHeads := c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd, stride := heads*hd, kvHeads*hd, d.qkvOut
	qRows := stride - 2*kvd // q_proj's rows: qd, or 2·qd with the output gates
	for i := lo; i < hi; i++ {
		r := p.row + i
		row := p.ws.qkv[r*stride : (r+1)*stride]
		if d.gated {
			splitGates(row, p.ws.gate[r*qd:(r+1)*qd], heads, hd)
		}
		q, k, v := row[:qd], row[qRows:qRows+kvd], row[qRows+kvd:]
		if L.qNorm != nil {
			// Per head ([head_dim] weights), or over the whole projection (OLMo's [q], [k]).
			d.normRows(q, q, norm{w: L.qNorm}, qd/len(L.qNorm), len(L.qNorm))
			d.normRows(k, k, norm{w: L.kNorm}, kvd/len(L.kNorm), len(L.kNorm))
		}
		if p.rope != nil {
			cos, sin := p.rope.At(p.pos + i)
			kernels.RoPE(q, heads, hd, cos, sin)
			kernels.RoPE(k, kvHeads, hd, cos, sin)
		}
		slot := (p.pos + i) % p.capacity
		for h := 0; h < kvHeads; h++ {
			at := (h*p.capacity + slot) * hd
			if p.keys16 != nil {
				half.F32ToF16(p.keys16[at:at+hd], k[h*hd:(h+1)*hd])
				half.F32ToF16(p.values16[at:at+hd], v[h*hd:(h+1)*hd])
			} else {
				copy(p.keys[at:at+hd], k[h*hd:(h+1)*hd])
				copy(p.values[at:at+hd], v[h*hd:(h+1)*hd])
			}
		}
	}
}
