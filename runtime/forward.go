package runtime

import (
	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// One pass of the forward pass runs the rows of a workspace: the tokens of one or more
// sequences (segments), each at its own positions in its own state. The projections see all the
// rows at once, so several sequences decoding together read every weight once per step instead
// of once per sequence; everything that touches a sequence's past (attention over its KV cache,
// the Gated DeltaNet's recurrence, RoPE at its positions) runs per segment.

// segment is one sequence's share of a pass: its tokens fill workspace rows [row, row+len(tokens)).
type segment struct {
	s      *decoderState
	tokens []int
	pos    int // the position of tokens[0]
	row    int
}

// workspace holds the activations of one pass of up to rows tokens, row-major [rows, ...], and
// the backend's projector for them. A state owns one for its own passes; a Batch owns one
// shared by the states it runs.
type workspace struct {
	proj Projector
	rows int
	x    []float32 // [rows, hidden] the residual stream
	xn   []float32 // [rows, hidden] a norm's output
	tmp  []float32 // [rows, hidden] a block's output before it joins the residual
	qkv  []float32 // [rows, attn_qkv's width] q (| gates) | k | v of each token, RoPE applied in place
	gate []float32 // [rows, q] the attention output gates, when the family has them
	att  []float32 // [rows, q] attention output
	lin  []float32 // [rows, linear_attn_in's width] the Gated DeltaNet's input projections
	linO []float32 // [rows, value heads · value dim] the Gated DeltaNet heads' outputs
	// router routes the tokens of a sparse MLP block (nil without sparse layers).
	router *router
	step   residualStep // the residual adds and norms between blocks
	prep   tokenPrep    // attention's per-token work before attention proper
}

// newWorkspace allocates the activations of rows tokens and a projector for them.
func (d *Decoder) newWorkspace(rows int) (*workspace, error) {
	p, err := d.proj.NewProjector(rows)
	if err != nil {
		return nil, err
	}
	c, h := d.cfg, d.cfg.HiddenSize
	ws := &workspace{proj: p, rows: rows,
		x: make([]float32, rows*h), xn: make([]float32, rows*h), tmp: make([]float32, rows*h)}
	ws.step = residualStep{d: d, x: ws.x, xn: ws.xn, tmp: ws.tmp}
	ws.step.fn = ws.step.run
	ws.prep = tokenPrep{d: d, ws: ws}
	ws.prep.fn = ws.prep.run
	if d.gQKV >= 0 {
		ws.qkv, ws.att = make([]float32, rows*d.qkvOut), make([]float32, rows*c.QDim())
		if d.gated {
			ws.gate = make([]float32, rows*c.QDim())
		}
	}
	if d.gLinIn >= 0 {
		ws.lin = make([]float32, rows*d.linInOut)
		ws.linO = make([]float32, rows*c.LinearValueDim())
	}
	if d.gExperts >= 0 {
		ws.router = d.newRouter(rows)
	}
	return ws, nil
}

// forward runs the segments' tokens (rows in all, at most ws.rows, each segment at most its
// state's batch) through every layer (the pass arch.Family describes), leaving the final
// residual stream in ws.x, their keys and values in the states' caches and the Gated DeltaNet
// layers' states advanced past them. A panic of the pass (a kernel's, on whichever goroutine of
// the pool) is returned as an error, so that the caller's bookkeeping of a failed pass runs
// and a server answers one request with an error instead of dying.
func (d *Decoder) forward(ws *workspace, segs []segment, rows int) (err error) {
	defer recoverPass(&err)
	return d.layersForward(ws, segs, rows)
}

// layersForward is forward without the recovery.
func (d *Decoder) layersForward(ws *workspace, segs []segment, rows int) error {
	hidden := d.cfg.HiddenSize
	x, xn, tmp := ws.x[:rows*hidden], ws.xn[:rows*hidden], ws.tmp[:rows*hidden]

	// x[rows, hidden] = embed_tokens[token] (· sqrt(hidden)) (+ position embedding[position])
	for _, sg := range segs {
		for i, t := range sg.tokens {
			r := sg.row + i
			row := x[r*hidden : (r+1)*hidden]
			d.embed.row(row, t)
			if d.embedScale != 0 {
				kernels.Scale(row, d.embedScale)
			}
			if d.posEmbed != nil {
				d.posEmbed.row(tmp[:hidden], sg.pos+i)
				kernels.Add(row, tmp[:hidden])
			}
		}
	}
	if len(d.layers) > 0 {
		// xn = the first layer's input norm(x)
		d.residual(ws, rows, norm{}, false, d.layers[0].inputNorm)
	}
	for l := range d.layers {
		L := &d.layers[l]
		// Token mixer: tmp = attention or Gated DeltaNet of xn.
		var err error
		if L.linear != nil {
			err = d.deltaNet(l, ws, segs, rows)
		} else {
			err = d.attention(l, ws, segs, rows)
		}
		if err != nil {
			return err
		}
		// x += post-attention norm?(tmp); xn = MLP norm(x)
		d.residual(ws, rows, L.postAttnNorm, true, L.mlpNorm)
		// MLP block: tmp = mlp(xn), or on a sparse layer the experts each token's router picks
		if L.router != nil {
			err = d.experts(l, ws, rows)
		} else {
			err = ws.proj.Group(l, d.gMLP, xn, rows, tmp)
		}
		if err != nil {
			return err
		}
		// x += post-MLP norm?(tmp); xn = the next layer's input norm(x) (the last layer's
		// final norm runs in logits, on the rows that need it)
		next := norm{}
		if l+1 < len(d.layers) {
			next = d.layers[l+1].inputNorm
		}
		d.residual(ws, rows, L.postMLPNorm, true, next)
	}
	return nil
}

// normRows applies the family's norm to each of rows rows of width values.
func (d *Decoder) normRows(dst, x []float32, nm norm, rows, width int) {
	for i := 0; i < rows; i++ {
		d.normRow(dst[i*width:(i+1)*width], x[i*width:(i+1)*width], nm)
	}
}

// normRow applies the family's norm to the vector x, into dst (which may be x).
func (d *Decoder) normRow(dst, x []float32, nm norm) {
	switch d.norm {
	case arch.RMSNorm:
		kernels.RMSNorm(dst, x, nm.w, d.eps)
	case arch.RMSNormPlusOne:
		kernels.RMSNormPlusOne(dst, x, nm.w, d.eps)
	case arch.LayerNorm:
		kernels.LayerNorm(dst, x, nm.w, nm.b, d.eps)
	}
}

// logits writes the logits of workspace rows [lo, hi) of the last pass into out ([hi-lo, vocab]):
// the final norm, then the LM head.
func (d *Decoder) logits(ws *workspace, out []float32, lo, hi int) (err error) {
	defer recoverPass(&err)
	hidden := d.cfg.HiddenSize
	xn := ws.xn[lo*hidden : hi*hidden]
	d.normRows(xn, ws.x[lo*hidden:hi*hidden], d.finalNorm, hi-lo, hidden)
	return ws.proj.LMHead(xn, hi-lo, out)
}
