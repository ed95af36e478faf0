package ane

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// NewState allocates a KV cache of maxTokens positions and the activations of one batch (the
// largest planned bucket). The cache's pages are touched only as positions are written.
func (b *Backend) NewState(maxTokens int) (runtime.State, error) {
	c := b.cfg
	if maxTokens <= 0 || maxTokens > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context of %d tokens: expected 1 to %d (the model's max_position_embeddings)", maxTokens, c.MaxPositionEmbeddings)
	}
	batch := min(b.batch, maxTokens)
	q, kv := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	cache := c.NumHiddenLayers * kv * maxTokens
	scratch := b.prefill.scratch()
	if b.decode != b.prefill {
		scratch = max(scratch, b.decode.scratch())
	}
	return &State{
		b: b, maxTokens: maxTokens, batch: batch, eps: float32(c.RMSNormEps),
		keys: make([]float32, cache), values: make([]float32, cache),
		x:    make([]float32, batch*c.HiddenSize),
		xn:   make([]float32, batch*c.HiddenSize),
		tmp:  make([]float32, batch*c.HiddenSize),
		qkv:  make([]float32, batch*(q+2*kv)),
		att:  make([]float32, batch*q),
		lm:   make([]float32, scratch),
		rope: kernels.NewRope(c.RopeTheta, c.HeadDim, maxTokens),
		attn: kernels.NewAttention(b.pool, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, maxTokens,
			float32(1/math.Sqrt(float64(c.HeadDim)))),
	}, nil
}

// State is one sequence: its KV cache (float32, on the CPU, where attention runs) and the
// activations of one batch. It implements runtime.State. It is not safe for concurrent use.
type State struct {
	b         *Backend
	maxTokens int
	batch     int
	eps       float32

	// KV cache, [layers][kvHeads][maxTokens][headDim] each.
	keys, values []float32

	// Activations of n <= batch tokens, token-major.
	x    []float32 // [n, hidden] residual stream
	xn   []float32 // [n, hidden] normed
	tmp  []float32 // [n, hidden] a block's output
	qkv  []float32 // [n, q+2kv] the QKV kernel's output; RoPE is applied in place
	att  []float32 // [n, q] attention output, the O kernel's input
	lm   []float32 // projector scratch (LM-head chunk outputs, CPU MLP)
	rope *kernels.Rope
	attn *kernels.Attention

	closed bool
}

// Forward implements runtime.State: it runs tokens at positions pos... and writes the logits of
// the last len(logits)/vocab of them. One token is a decode step (Options.DecodeOn says where
// its projections run); more are prefill, on the kernels, in passes of the largest bucket.
func (s *State) Forward(tokens []int, pos int, logits []float32) error {
	b := s.b
	vocab := b.cfg.VocabSize
	switch {
	case s.closed:
		return fmt.Errorf("%s: Forward on a closed state", b.name)
	case len(tokens) == 0:
		return fmt.Errorf("%s: Forward of no tokens", b.name)
	case pos < 0 || pos+len(tokens) > s.maxTokens:
		return fmt.Errorf("%s: positions [%d, %d) are outside the context of %d tokens", b.name, pos, pos+len(tokens), s.maxTokens)
	case len(logits)%vocab != 0 || len(logits)/vocab > len(tokens):
		return fmt.Errorf("%s: logits buffer of %d values is not a whole number of rows of %d for at most %d tokens", b.name, len(logits), vocab, len(tokens))
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("%s: token %d (at index %d) is outside the vocabulary [0, %d)", b.name, t, i, vocab)
		}
	}
	p := b.prefill
	if len(tokens) == 1 {
		p = b.decode
	}
	s.rope.UpTo(pos + len(tokens))
	firstOut := len(tokens) - len(logits)/vocab
	for c0 := 0; c0 < len(tokens); c0 += s.batch {
		c1 := min(len(tokens), c0+s.batch)
		if err := s.forward(p, tokens[c0:c1], pos+c0); err != nil {
			return b.wrap(err)
		}
		if lo := max(c0, firstOut); lo < c1 {
			if err := s.logits(p, logits[(lo-firstOut)*vocab:(c1-firstOut)*vocab], lo-c0, c1-c0); err != nil {
				return b.wrap(err)
			}
		}
	}
	return nil
}

// forward runs n = len(tokens) <= batch tokens through every layer, leaving the final residual
// stream in s.x and their keys and values in the cache. It follows runtime/cpu's forward pass
// (HF's Qwen2 order of operations); only the projections go to p.
func (s *State) forward(p projector, tokens []int, pos int) error {
	c := s.b.cfg
	n, hidden, hd := len(tokens), c.HiddenSize, c.HeadDim
	heads, kvHeads := c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd := heads*hd, kvHeads*hd
	stride := qd + 2*kvd
	x, xn, tmp := s.x[:n*hidden], s.xn[:n*hidden], s.tmp[:n*hidden]
	qkv, att := s.qkv[:n*stride], s.att[:n*qd]

	for i, t := range tokens {
		s.embed(x[i*hidden:(i+1)*hidden], t)
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		// Attention block: xn = input_layernorm(x); q | k | v = the QKV kernel (bias included).
		for i := 0; i < n; i++ {
			kernels.RMSNorm(xn[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], s.b.inNorm[l], s.eps)
		}
		if err := p.qkv(l, xn, n, qkv); err != nil {
			return err
		}
		// RoPE on q and k in place, then k and v into the cache: cache[l][kvHead][pos+i][hd].
		layerBase := l * kvHeads * s.maxTokens * hd
		for i := 0; i < n; i++ {
			row := qkv[i*stride : (i+1)*stride]
			q, k, v := row[:qd], row[qd:qd+kvd], row[qd+kvd:]
			cos, sin := s.rope.At(pos + i)
			kernels.RoPE(q, heads, hd, cos, sin)
			kernels.RoPE(k, kvHeads, hd, cos, sin)
			for h := 0; h < kvHeads; h++ {
				at := layerBase + (h*s.maxTokens+pos+i)*hd
				copy(s.keys[at:at+hd], k[h*hd:(h+1)*hd])
				copy(s.values[at:at+hd], v[h*hd:(h+1)*hd])
			}
		}
		layerK := s.keys[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		layerV := s.values[layerBase : layerBase+kvHeads*s.maxTokens*hd]
		s.attn.Compute(att, qkv, stride, layerK, layerV, n, pos)
		// x += o_proj(att)
		if err := p.o(l, att, n, tmp); err != nil {
			return err
		}
		kernels.Add(x, tmp)
		// MLP block: x += mlp(post_attention_layernorm(x)).
		for i := 0; i < n; i++ {
			kernels.RMSNorm(xn[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], s.b.postNorm[l], s.eps)
		}
		if err := p.mlp(l, xn, n, tmp, s.lm); err != nil {
			return err
		}
		kernels.Add(x, tmp)
	}
	return nil
}

// logits writes the logits of batch rows [lo, hi) of the last forward into out: the final
// norm, then the LM head, lmPiece positions at a time.
func (s *State) logits(p projector, out []float32, lo, hi int) error {
	hidden, vocab := s.b.cfg.HiddenSize, s.b.cfg.VocabSize
	for i := lo; i < hi; i++ {
		kernels.RMSNorm(s.xn[i*hidden:(i+1)*hidden], s.x[i*hidden:(i+1)*hidden], s.b.finalNorm, s.eps)
	}
	for t0 := lo; t0 < hi; t0 += lmPiece {
		t1 := min(hi, t0+lmPiece)
		if err := p.lmHead(s.xn[t0*hidden:t1*hidden], t1-t0, out[(t0-lo)*vocab:(t1-lo)*vocab], s.lm); err != nil {
			return err
		}
	}
	return nil
}

// embed writes row t of the embedding (over its row chunks) into dst.
func (s *State) embed(dst []float32, t int) {
	for i := range s.b.embed {
		e := &s.b.embed[i]
		if t >= e.rows {
			t -= e.rows
			continue
		}
		if e.f16 != nil {
			half.F16ToF32(dst, e.f16[t*e.cols:(t+1)*e.cols])
		} else {
			copy(dst, e.f32[t*e.cols:(t+1)*e.cols])
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
