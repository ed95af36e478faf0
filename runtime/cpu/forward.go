package cpu

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/runtime/kernels"
)

// State is one sequence on the CPU: its KV cache and the activations of one batch of tokens.
// It implements runtime.State. A State is not safe for concurrent use.
type State struct {
	cfg       *arch.Config
	w         *weights
	maxTokens int
	batch     int // tokens per pass; longer inputs run in chunks
	eps       float32

	// KV cache, [layers][kvHeads][maxTokens][headDim] each: a head's keys are contiguous, which
	// is the order attention reads them in.
	keys, values []float32

	// Activations of one batch of n <= batch tokens, row-major [n, ...].
	x      []float32 // [n, hidden] the residual stream
	xn     []float32 // [n, hidden] x after RMSNorm
	tmp    []float32 // [n, hidden] a block's output before it joins the residual
	q      []float32 // [n, heads*headDim]
	k, v   []float32 // [n, kvHeads*headDim]
	att    []float32 // [n, heads*headDim] attention output
	mlp    []float32 // [n, intermediate] silu(gate)*up
	rope   *kernels.Rope
	lin    *dispatch
	attn   *kernels.Attention
	closed bool
}

// Forward implements runtime.State: it runs tokens at positions pos... and writes the logits of
// the last len(logits)/vocab of them.
func (s *State) Forward(tokens []int, pos int, logits []float32) error {
	c := s.cfg
	vocab := c.VocabSize
	switch {
	case s.closed:
		return fmt.Errorf("cpu: Forward on a closed state")
	case len(tokens) == 0:
		return fmt.Errorf("cpu: Forward of no tokens")
	case pos < 0 || pos+len(tokens) > s.maxTokens:
		return fmt.Errorf("cpu: positions [%d, %d) are outside the context of %d tokens", pos, pos+len(tokens), s.maxTokens)
	case len(logits)%vocab != 0 || len(logits)/vocab > len(tokens):
		return fmt.Errorf("cpu: logits buffer of %d values is not a whole number of rows of %d for at most %d tokens", len(logits), vocab, len(tokens))
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("cpu: token %d (at index %d) is outside the vocabulary [0, %d)", t, i, vocab)
		}
	}
	s.rope.UpTo(pos + len(tokens))
	firstOut := len(tokens) - len(logits)/vocab // the first token whose logits are wanted
	for c0 := 0; c0 < len(tokens); c0 += s.batch {
		c1 := min(len(tokens), c0+s.batch)
		s.forward(tokens[c0:c1], pos+c0)
		if lo := max(c0, firstOut); lo < c1 {
			s.logits(logits[(lo-firstOut)*vocab:(c1-firstOut)*vocab], lo-c0, c1-c0)
		}
	}
	return nil
}

// forward runs n = len(tokens) <= batch tokens at positions pos... through every layer, leaving
// the final residual stream in s.x and their keys and values in the cache.
func (s *State) forward(tokens []int, pos int) {
	c, w := s.cfg, s.w
	n, hidden, hd := len(tokens), c.HiddenSize, c.HeadDim
	heads, kvHeads := c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd := heads*hd, kvHeads*hd
	x, xn, tmp := s.x[:n*hidden], s.xn[:n*hidden], s.tmp[:n*hidden]
	q, k, v, att, mlp := s.q[:n*qd], s.k[:n*kvd], s.v[:n*kvd], s.att[:n*qd], s.mlp[:n*c.IntermediateSize]

	// x[n, hidden] = embed_tokens[tokens]
	for i, t := range tokens {
		s.embed(x[i*hidden:(i+1)*hidden], t)
	}

	for l := range w.layers {
		L := &w.layers[l]

		// Attention block. xn = input_layernorm(x)
		for i := 0; i < n; i++ {
			kernels.RMSNorm(xn[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], L.inputLayernorm, s.eps)
		}
		// q[n, heads*hd], k, v[n, kvHeads*hd] = xn·Wᵀ + b, one dispatch for the three
		s.lin.add(&L.qProj, L.qBias, q, qd, 0)
		s.lin.add(&L.kProj, L.kBias, k, kvd, 0)
		s.lin.add(&L.vProj, L.vBias, v, kvd, 0)
		s.lin.linear(xn, n)
		// RoPE on q and k at each token's position, then k and v into the cache:
		// cache[l][kvHead][pos+i][hd]
		layerBase := l * kvHeads * s.maxTokens * hd
		for i := 0; i < n; i++ {
			cos, sin := s.rope.At(pos + i)
			kernels.RoPE(q[i*qd:(i+1)*qd], heads, hd, cos, sin)
			kernels.RoPE(k[i*kvd:(i+1)*kvd], kvHeads, hd, cos, sin)
			for h := 0; h < kvHeads; h++ {
				at := layerBase + (h*s.maxTokens+pos+i)*hd
				copy(s.keys[at:at+hd], k[i*kvd+h*hd:i*kvd+(h+1)*hd])
				copy(s.values[at:at+hd], v[i*kvd+h*hd:i*kvd+(h+1)*hd])
			}
		}
		// att[n, heads*hd] = softmax(q·kᵀ/sqrt(hd), causal)·v over positions [0, pos+i]
		layerKV := s.keys[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		layerV := s.values[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		s.attn.Compute(att, q, qd, layerKV, layerV, n, pos)
		// x += o_proj(att)
		s.lin.add(&L.oProj, nil, tmp, hidden, 0)
		s.lin.linear(att, n)
		kernels.Add(x, tmp)

		// MLP block. xn = post_attention_layernorm(x)
		for i := 0; i < n; i++ {
			kernels.RMSNorm(xn[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], L.postAttentionLayernorm, s.eps)
		}
		// mlp[n, intermediate] = silu(gate_proj(xn)) * up_proj(xn)
		s.lin.swiGLU(mlp, xn, n, &L.gateProj, &L.upProj)
		// x += down_proj(mlp)
		s.lin.add(&L.downProj, nil, tmp, hidden, 0)
		s.lin.linear(mlp, n)
		kernels.Add(x, tmp)
	}
}

// logits writes the logits of batch rows [lo, hi) of the last forward into out ([hi-lo, vocab]):
// the final norm, then the LM head over its row chunks in one dispatch.
func (s *State) logits(out []float32, lo, hi int) {
	c, w := s.cfg, s.w
	hidden := c.HiddenSize
	xn := s.xn[lo*hidden : hi*hidden]
	for i := lo; i < hi; i++ {
		kernels.RMSNorm(s.xn[i*hidden:(i+1)*hidden], s.x[i*hidden:(i+1)*hidden], w.norm, s.eps)
	}
	col := 0
	for i := range w.lmHead {
		s.lin.add(&w.lmHead[i], nil, out, c.VocabSize, col)
		col += w.lmHead[i].rows
	}
	s.lin.linear(xn, hi-lo)
}

// embed writes row t of the embedding table (over its row chunks) into dst.
func (s *State) embed(dst []float32, t int) {
	for i := range s.w.embedTokens {
		e := &s.w.embedTokens[i]
		if t >= e.rows {
			t -= e.rows
			continue
		}
		c := e.cols
		if e.f16 != nil {
			half.F16ToF32(dst, e.f16[t*c:(t+1)*c])
		} else {
			copy(dst, e.f32[t*c:(t+1)*c])
		}
		return
	}
}

// Close releases the cache. The State must not be used afterwards.
func (s *State) Close() error {
	s.closed = true
	s.keys, s.values = nil, nil
	return nil
}
