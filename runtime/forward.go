package runtime

import (
	"fmt"

	"github.com/anepack/anepack/runtime/kernels"
)

// decoderState is one sequence: its KV cache and the activations of one batch of tokens. It
// implements State. It is not safe for concurrent use.
type decoderState struct {
	d         *Decoder
	proj      Projector
	maxTokens int
	batch     int // tokens per pass; longer inputs run in chunks
	eps       float32
	// KV cache, [layers][kvHeads][maxTokens][headDim] each: a head's keys are contiguous, which
	// is the order attention reads them in.
	keys, values []float32
	// Activations of one batch of n <= batch tokens, row-major [n, ...].
	x    []float32 // [n, hidden] the residual stream
	xn   []float32 // [n, hidden] a norm's output
	tmp  []float32 // [n, hidden] a block's output before it joins the residual
	qkv  []float32 // [n, q+2kv] q | k | v of each token, RoPE applied in place
	att  []float32 // [n, q] attention output
	rope *kernels.Rope
	attn *kernels.Attention

	closed bool
}

// Forward implements State: it runs tokens at positions pos... and writes the logits of the
// last len(logits)/vocab of them.
func (s *decoderState) Forward(tokens []int, pos int, logits []float32) error {
	d := s.d
	vocab := d.cfg.VocabSize
	switch {
	case s.closed:
		return fmt.Errorf("%s: Forward on a closed state", d.name)
	case len(tokens) == 0:
		return fmt.Errorf("%s: Forward of no tokens", d.name)
	case pos < 0 || pos+len(tokens) > s.maxTokens:
		return fmt.Errorf("%s: positions [%d, %d) are outside the context of %d tokens", d.name, pos, pos+len(tokens), s.maxTokens)
	case len(logits)%vocab != 0 || len(logits)/vocab > len(tokens):
		return fmt.Errorf("%s: logits buffer of %d values is not a whole number of rows of %d for at most %d tokens", d.name, len(logits), vocab, len(tokens))
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("%s: token %d (at index %d) is outside the vocabulary [0, %d)", d.name, t, i, vocab)
		}
	}
	s.rope.UpTo(pos + len(tokens))
	firstOut := len(tokens) - len(logits)/vocab // the first token whose logits are wanted
	for c0 := 0; c0 < len(tokens); c0 += s.batch {
		c1 := min(len(tokens), c0+s.batch)
		if err := s.forward(tokens[c0:c1], pos+c0); err != nil {
			return d.wrap(err)
		}
		if lo := max(c0, firstOut); lo < c1 {
			if err := s.logits(logits[(lo-firstOut)*vocab:(c1-firstOut)*vocab], lo-c0, c1-c0); err != nil {
				return d.wrap(err)
			}
		}
	}
	return nil
}

// forward runs n = len(tokens) <= batch tokens at positions pos... through every layer (the
// pass arch.Family describes), leaving the final residual stream in s.x and their keys and
// values in the cache.
func (s *decoderState) forward(tokens []int, pos int) error {
	d, c := s.d, s.d.cfg
	n, hidden, hd := len(tokens), c.HiddenSize, c.HeadDim
	heads, kvHeads := c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd := heads*hd, kvHeads*hd
	stride := qd + 2*kvd
	x, xn, tmp := s.x[:n*hidden], s.xn[:n*hidden], s.tmp[:n*hidden]
	qkv, att := s.qkv[:n*stride], s.att[:n*qd]

	// x[n, hidden] = embed_tokens[tokens]
	for i, t := range tokens {
		d.embed.Row(x[i*hidden:(i+1)*hidden], t)
	}
	for l := range d.layers {
		L := &d.layers[l]
		// Attention block. xn = input norm(x); qkv[n, q | k | v] = the QKV projections (+ biases).
		s.normRows(xn, x, L.inputNorm, n, hidden)
		if err := s.proj.Group(l, d.gQKV, xn, n, qkv); err != nil {
			return err
		}
		// Per token: q and k norms per head (when the family has them), RoPE at the token's
		// position, then k and v into the cache: cache[l][kvHead][pos+i][hd].
		layerBase := l * kvHeads * s.maxTokens * hd
		for i := 0; i < n; i++ {
			row := qkv[i*stride : (i+1)*stride]
			q, k, v := row[:qd], row[qd:qd+kvd], row[qd+kvd:]
			if L.qNorm != nil {
				s.normRows(q, q, L.qNorm, heads, hd)
				s.normRows(k, k, L.kNorm, kvHeads, hd)
			}
			cos, sin := s.rope.At(pos + i)
			kernels.RoPE(q, heads, hd, cos, sin)
			kernels.RoPE(k, kvHeads, hd, cos, sin)
			for h := 0; h < kvHeads; h++ {
				at := layerBase + (h*s.maxTokens+pos+i)*hd
				copy(s.keys[at:at+hd], k[h*hd:(h+1)*hd])
				copy(s.values[at:at+hd], v[h*hd:(h+1)*hd])
			}
		}
		// att[n, heads*hd] = softmax(q·kᵀ·scale, causal)·v over positions [0, pos+i]
		layerK := s.keys[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		layerV := s.values[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		s.attn.Compute(att, qkv, stride, layerK, layerV, n, pos)
		// x += post-attention norm?(o_proj(att))
		if err := s.proj.Group(l, d.gO, att, n, tmp); err != nil {
			return err
		}
		if L.postAttnNorm != nil {
			s.normRows(tmp, tmp, L.postAttnNorm, n, hidden)
		}
		kernels.Add(x, tmp)
		// MLP block. x += post-MLP norm?(mlp(MLP norm(x)))
		s.normRows(xn, x, L.mlpNorm, n, hidden)
		if err := s.proj.Group(l, d.gMLP, xn, n, tmp); err != nil {
			return err
		}
		if L.postMLPNorm != nil {
			s.normRows(tmp, tmp, L.postMLPNorm, n, hidden)
		}
		kernels.Add(x, tmp)
	}
	return nil
}

// normRows applies the family's norm with weight w to each of rows rows of width values.
func (s *decoderState) normRows(dst, x, w []float32, rows, width int) {
	for i := 0; i < rows; i++ {
		s.d.norm(dst[i*width:(i+1)*width], x[i*width:(i+1)*width], w, s.eps)
	}
}

// logits writes the logits of batch rows [lo, hi) of the last forward into out ([hi-lo, vocab]):
// the final norm, then the LM head.
func (s *decoderState) logits(out []float32, lo, hi int) error {
	hidden := s.d.cfg.HiddenSize
	xn := s.xn[lo*hidden : hi*hidden]
	s.normRows(xn, s.x[lo*hidden:hi*hidden], s.d.finalNorm, hi-lo, hidden)
	return s.proj.LMHead(xn, hi-lo, out)
}

// Close releases the cache. The state must not be used afterwards.
func (s *decoderState) Close() error {
	s.closed = true
	s.keys, s.values = nil, nil
	return nil
}
