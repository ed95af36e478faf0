package runtime

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// decoderState is one sequence: its KV cache, the recurrent state of its Gated DeltaNet layers
// and the activations of one batch of tokens. It implements State and Resumer. It is not safe
// for concurrent use.
type decoderState struct {
	d         *Decoder
	proj      Projector
	maxTokens int
	batch     int // tokens per pass; longer inputs run in chunks
	eps       float32
	// KV cache: layer l's keys are keys[base[l]:], [kvHeads][capacity[l]][headDim] (a head's
	// keys are contiguous, the order attention reads them in); values likewise. A full-attention
	// layer holds every position; a sliding layer is a ring (position p at slot p % capacity).
	keys, values   []float32
	base, capacity []int
	end            int // positions [0, end) are cached, as far as a ring keeps them
	// Activations of one batch of n <= batch tokens, row-major [n, ...].
	x         []float32 // [n, hidden] the residual stream
	xn        []float32 // [n, hidden] a norm's output
	tmp       []float32 // [n, hidden] a block's output before it joins the residual
	qkv       []float32 // [n, attn_qkv's width] q (| gates) | k | v of each token, RoPE applied in place
	gate      []float32 // [n, q] the attention output gates, when the family has them
	att       []float32 // [n, q] attention output
	rope      *kernels.Rope
	ropeLocal *kernels.Rope // the sliding layers' tables, when they have their own base
	attn      *kernels.Attention
	// lin is the Gated DeltaNet layers' recurrent state and scratch (nil without such layers).
	lin *linearState

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
	case pos > s.end:
		return fmt.Errorf("%s: position %d leaves a gap after the %d cached positions", d.name, pos, s.end)
	case s.ResumeAt(pos) != pos:
		return fmt.Errorf("%s: the state cannot continue from position %d (a sliding-window ring or a recurrent state keeps only part of the past); continue from %d", d.name, pos, s.ResumeAt(pos))
	case len(logits)%vocab != 0 || len(logits)/vocab > len(tokens):
		return fmt.Errorf("%s: logits buffer of %d values is not a whole number of rows of %d for at most %d tokens", d.name, len(logits), vocab, len(tokens))
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("%s: token %d (at index %d) is outside the vocabulary [0, %d)", d.name, t, i, vocab)
		}
	}
	if s.rope != nil {
		s.rope.UpTo(pos + len(tokens))
		if s.ropeLocal != nil {
			s.ropeLocal.UpTo(pos + len(tokens))
		}
	}
	if s.lin != nil {
		s.lin.begin(pos, len(tokens))
	}
	firstOut := len(tokens) - len(logits)/vocab // the first token whose logits are wanted
	for c0 := 0; c0 < len(tokens); c0 += s.batch {
		c1 := min(len(tokens), c0+s.batch)
		s.end = pos + c0 // a failed pass leaves the cache valid up to here
		if err := s.forward(tokens[c0:c1], pos+c0); err != nil {
			if s.lin != nil {
				s.lin.fail() // some layers' recurrent states have moved on, others not
			}
			return d.wrap(err)
		}
		s.end = pos + c1
		if s.lin != nil {
			s.lin.done(pos + c1)
		}
		if lo := max(c0, firstOut); lo < c1 {
			if err := s.logits(logits[(lo-firstOut)*vocab:(c1-firstOut)*vocab], lo-c0, c1-c0); err != nil {
				return d.wrap(err)
			}
		}
	}
	return nil
}

// ResumeAt implements Resumer: the largest position p <= pos from which Forward can continue.
// A full-attention cache allows any; the Gated DeltaNet layers' recurrent state its current
// position, 0, and the positions it keeps snapshots of (recurrent.go); a sliding layer's ring
// allows p only while it still holds the window of positions before p, else the sequence is
// recomputed from 0.
func (s *decoderState) ResumeAt(pos int) int {
	pos = min(pos, s.end)
	if s.lin != nil {
		pos = s.lin.resumeAt(pos)
	}
	for l, L := range s.d.layers {
		if !L.sliding {
			continue
		}
		oldest := max(0, s.end-s.capacity[l]) // the ring holds [oldest, end)
		if max(0, pos-s.d.window+1) < oldest {
			return 0
		}
	}
	return pos
}

// forward runs n = len(tokens) <= batch tokens at positions pos... through every layer (the
// pass arch.Family describes), leaving the final residual stream in s.x, their keys and values
// in the cache and the Gated DeltaNet layers' states advanced past them.
func (s *decoderState) forward(tokens []int, pos int) error {
	d, c := s.d, s.d.cfg
	n, hidden := len(tokens), c.HiddenSize
	x, xn, tmp := s.x[:n*hidden], s.xn[:n*hidden], s.tmp[:n*hidden]

	// x[n, hidden] = embed_tokens[tokens] (· sqrt(hidden)) (+ position embedding[pos+i])
	for i, t := range tokens {
		row := x[i*hidden : (i+1)*hidden]
		d.embed.Row(row, t)
		if d.embedScale != 0 {
			kernels.Scale(row, d.embedScale)
		}
		if d.posEmbed != nil {
			d.posEmbed.Row(tmp[:hidden], pos+i)
			kernels.Add(row, tmp[:hidden])
		}
	}
	for l := range d.layers {
		L := &d.layers[l]
		// Token mixer. tmp = attention or Gated DeltaNet of input norm(x);
		// x += post-attention norm?(tmp)
		s.normRows(xn, x, L.inputNorm, n, hidden)
		var err error
		if L.linear != nil {
			err = s.deltaNet(l, xn, n, pos, tmp)
		} else {
			err = s.attention(l, xn, n, pos, tmp)
		}
		if err != nil {
			return err
		}
		if L.postAttnNorm.w != nil {
			s.normRows(tmp, tmp, L.postAttnNorm, n, hidden)
		}
		kernels.Add(x, tmp)
		// MLP block. x += post-MLP norm?(mlp(MLP norm(x)))
		s.normRows(xn, x, L.mlpNorm, n, hidden)
		if err := s.proj.Group(l, d.gMLP, xn, n, tmp); err != nil {
			return err
		}
		if L.postMLPNorm.w != nil {
			s.normRows(tmp, tmp, L.postMLPNorm, n, hidden)
		}
		kernels.Add(x, tmp)
	}
	return nil
}

// normRows applies the family's norm to each of rows rows of width values.
func (s *decoderState) normRows(dst, x []float32, nm norm, rows, width int) {
	for i := 0; i < rows; i++ {
		o, in := dst[i*width:(i+1)*width], x[i*width:(i+1)*width]
		switch s.d.norm {
		case arch.RMSNorm:
			kernels.RMSNorm(o, in, nm.w, s.eps)
		case arch.RMSNormPlusOne:
			kernels.RMSNormPlusOne(o, in, nm.w, s.eps)
		case arch.LayerNorm:
			kernels.LayerNorm(o, in, nm.w, nm.b, s.eps)
		}
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

// Close releases the cache and the recurrent state. The state must not be used afterwards.
func (s *decoderState) Close() error {
	s.closed = true
	s.keys, s.values, s.lin = nil, nil, nil
	return nil
}
