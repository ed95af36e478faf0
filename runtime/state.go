package runtime

import (
	"fmt"

	"github.com/anepack/anepack/runtime/kernels"
)

// decoderState is one sequence: its KV cache, the recurrent state of its Gated DeltaNet layers
// and the workspace of its own passes. It implements State and Resumer. It is not safe for
// concurrent use.
type decoderState struct {
	d         *Decoder
	ws        *workspace
	maxTokens int
	batch     int // tokens per pass; longer inputs run in chunks
	// KV cache: layer l's keys are keys[base[l]:], [kvHeads][capacity[l]][headDim] (a head's
	// keys are contiguous, the order attention reads them in); values likewise. A full-attention
	// layer holds every position; a sliding layer is a ring (position p at slot p % capacity).
	// keys and values are float32 (CacheF32); with CacheF16 keys16 and values16 hold fp16 bits
	// instead.
	keys, values     []float32
	keys16, values16 []uint16
	base, capacity   []int
	end              int // positions [0, end) are cached, as far as a ring keeps them
	rope             *kernels.Rope
	ropeLocal        *kernels.Rope // the sliding layers' tables, when they have their own base
	attn             *kernels.Attention
	// lin is the Gated DeltaNet layers' recurrent state and scratch (nil without such layers).
	lin *linearState
	seg [1]segment // the one segment of the state's own passes

	closed bool
}

// Forward implements State: it runs tokens at positions pos... and writes the logits of the
// last len(logits)/vocab of them.
func (s *decoderState) Forward(tokens []int, pos int, logits []float32) error {
	d := s.d
	vocab := d.cfg.VocabSize
	if err := s.check(tokens, pos); err != nil {
		return err
	}
	if len(logits)%vocab != 0 || len(logits)/vocab > len(tokens) {
		return fmt.Errorf("%s: logits buffer of %d values is not a whole number of rows of %d for at most %d tokens", d.name, len(logits), vocab, len(tokens))
	}
	s.begin(pos, len(tokens))
	// The caller's tokens are not the state's to keep.
	defer clear(s.seg[:])
	firstOut := len(tokens) - len(logits)/vocab // the first token whose logits are wanted
	for c0 := 0; c0 < len(tokens); c0 += s.batch {
		c1 := min(len(tokens), c0+s.batch)
		s.end = pos + c0 // a failed pass leaves the cache valid up to here
		s.seg[0] = segment{s: s, tokens: tokens[c0:c1], pos: pos + c0}
		if err := d.forward(s.ws, s.seg[:], c1-c0); err != nil {
			s.failed()
			return d.wrap(err)
		}
		s.done(pos + c1)
		if lo := max(c0, firstOut); lo < c1 {
			if err := d.logits(s.ws, logits[(lo-firstOut)*vocab:(c1-firstOut)*vocab], lo-c0, c1-c0); err != nil {
				return d.wrap(err)
			}
		}
	}
	return nil
}

// check validates a pass of tokens at positions pos... on s.
func (s *decoderState) check(tokens []int, pos int) error {
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
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("%s: token %d (at index %d) is outside the vocabulary [0, %d)", d.name, t, i, vocab)
		}
	}
	return nil
}

// begin readies the state for n tokens at positions pos...: the RoPE tables up to their end,
// and the recurrent state at pos (restored from a snapshot where needed).
func (s *decoderState) begin(pos, n int) {
	if s.rope != nil {
		s.rope.UpTo(pos + n)
		if s.ropeLocal != nil {
			s.ropeLocal.UpTo(pos + n)
		}
	}
	if s.lin != nil {
		s.lin.begin(pos, n)
	}
}

// done records a pass that ran every layer for the positions up to end.
func (s *decoderState) done(end int) {
	s.end = end
	if s.lin != nil {
		s.lin.done(end)
	}
}

// failed records a pass that stopped part of the way through the layers: the KV cache is valid
// up to s.end (set before the pass), the recurrent state only at its snapshots.
func (s *decoderState) failed() {
	if s.lin != nil {
		s.lin.fail() // some layers' recurrent states have moved on, others not
	}
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

// Bytes implements Sizer: the KV cache as allocated (a sliding layer's ring holds its window,
// not the context), the Gated DeltaNet layers' recurrent state and the snapshots kept of it.
func (s *decoderState) Bytes() int64 {
	n := int64(len(s.keys)+len(s.values)+len(s.keys16)+len(s.values16)) * s.d.cache.ValueBytes()
	if s.lin != nil {
		n += s.lin.bytes()
	}
	return n
}

// Close releases the cache and the recurrent state. The state must not be used afterwards.
func (s *decoderState) Close() error {
	s.closed = true
	s.keys, s.values, s.keys16, s.values16, s.lin = nil, nil, nil, nil, nil
	return nil
}
