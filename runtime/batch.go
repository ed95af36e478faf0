package runtime

import (
	"errors"
	"fmt"
)

// Decode reads every weight once per step, whatever the number of tokens in the step, so
// sequences that decode together share that traffic: a server running N streams through one
// pass serves nearly N times the tokens of N passes. A Batch is that shared pass.

// BatchStep is one sequence's share of a batched pass: Tokens at positions Pos, Pos+1, ... in
// State, exactly as State.Forward would run them.
type BatchStep struct {
	State  State
	Tokens []int
	Pos    int
	// Logits, when not nil, receives the logits [vocab] that follow the step's last token.
	Logits []float32
}

// Batcher is implemented by backends whose states can share a pass (every backend built on a
// Decoder).
type Batcher interface {
	// NewBatch allocates a pass of up to rows tokens in all, from up to seqs sequences.
	NewBatch(rows, seqs int) (Batch, error)
	// PassTokens returns the most tokens one state runs in one pass (a batch step's limit).
	PassTokens() int
}

// Batch runs the next tokens of several sequences in one pass: the projections (and the LM
// head) see every step's tokens as rows of one matrix, while each sequence's attention reads
// its own cache. The results are those of running each step alone, up to the rounding a
// backend's products may differ by between row counts. A Batch is not safe for concurrent use;
// its states must not be used elsewhere during Forward.
type Batch interface {
	// Forward runs the steps: distinct states of the batch's backend, each step at most the
	// backend's pass size and all together at most the batch's rows. On an error no state
	// is left part-way: each keeps its cache up to the step's Pos.
	Forward(steps []BatchStep) error
	// Close releases the batch's activations.
	Close() error
}

// ErrBatchClosed is returned by a closed Batch.
var ErrBatchClosed = errors.New("runtime: Forward on a closed batch")

// decoderBatch is the Decoder's Batch: one workspace for the pass, the segments of its steps,
// and the logits of the steps that want them, side by side for one LM-head product.
type decoderBatch struct {
	d      *Decoder
	ws     *workspace
	seqs   int
	segs   []segment
	want   []int     // indices of the steps that want logits
	logits []float32 // [seqs, vocab]
	closed bool
}

// NewBatch implements Batcher.
func (d *Decoder) NewBatch(rows, seqs int) (Batch, error) {
	if rows <= 0 || seqs <= 0 || seqs > rows {
		return nil, fmt.Errorf("%s: a batch of %d rows for %d sequences: expected 1 <= sequences <= rows", d.name, rows, seqs)
	}
	if err := d.checkBatchMemory(rows, seqs); err != nil {
		return nil, err
	}
	ws, err := d.newWorkspace(rows)
	if err != nil {
		return nil, err
	}
	return &decoderBatch{d: d, ws: ws, seqs: seqs, segs: make([]segment, 0, seqs), want: make([]int, 0, seqs),
		logits: make([]float32, seqs*d.cfg.VocabSize)}, nil
}

// PassTokens implements Batcher: the backend's pass size (DecoderOptions.Batch).
func (d *Decoder) PassTokens() int { return d.batch }

// Forward implements Batch.
func (b *decoderBatch) Forward(steps []BatchStep) error {
	d := b.d
	vocab := d.cfg.VocabSize
	if b.closed {
		return ErrBatchClosed
	}
	if len(steps) == 0 || len(steps) > b.seqs {
		return fmt.Errorf("%s: a batch of %d steps: expected 1 to %d", d.name, len(steps), b.seqs)
	}
	b.segs, b.want = b.segs[:0], b.want[:0]
	// The segments hold the callers' token slices (a server's point into its requests): drop
	// them when the pass is done, or up to seqs finished requests stay reachable from an idle
	// batch. (A closure: b.segs grows below, after the defer statement.)
	defer func() { clear(b.segs) }()
	rows := 0
	for i, st := range steps {
		s, ok := st.State.(*decoderState)
		switch {
		case !ok || s.d != d:
			return fmt.Errorf("%s: step %d's state belongs to another backend", d.name, i)
		case len(st.Tokens) > s.batch:
			return fmt.Errorf("%s: step %d has %d tokens; a batch step takes at most %d (run longer prompts in chunks)", d.name, i, len(st.Tokens), s.batch)
		case st.Logits != nil && len(st.Logits) != vocab:
			return fmt.Errorf("%s: step %d's logits buffer holds %d values; expected the vocabulary size %d", d.name, i, len(st.Logits), vocab)
		}
		if err := s.check(st.Tokens, st.Pos); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		for _, sg := range b.segs {
			if sg.s == s {
				return fmt.Errorf("%s: step %d's state is already in the batch", d.name, i)
			}
		}
		b.segs = append(b.segs, segment{s: s, tokens: st.Tokens, pos: st.Pos, row: rows})
		rows += len(st.Tokens)
		if rows > b.ws.rows {
			return fmt.Errorf("%s: the batch's steps hold more than its %d rows", d.name, b.ws.rows)
		}
		if st.Logits != nil {
			b.want = append(b.want, i)
		}
	}
	for _, sg := range b.segs {
		sg.s.begin(sg.pos, len(sg.tokens))
		sg.s.end = sg.pos // a failed pass leaves the cache valid up to here
	}
	if err := d.forward(b.ws, b.segs, rows); err != nil {
		for _, sg := range b.segs {
			sg.s.failed()
		}
		return d.wrap(err)
	}
	for _, sg := range b.segs {
		sg.s.done(sg.pos + len(sg.tokens))
	}
	if len(b.want) == 0 {
		return nil
	}
	// The wanted rows (each step's last) move to the front of the workspace, in step order, so
	// that one LM-head product computes all their logits. Row j <= the step's last row, so
	// nothing unread is overwritten.
	hidden := d.cfg.HiddenSize
	for j, i := range b.want {
		sg := b.segs[i]
		r := sg.row + len(sg.tokens) - 1
		copy(b.ws.x[j*hidden:(j+1)*hidden], b.ws.x[r*hidden:(r+1)*hidden])
	}
	k := len(b.want)
	if err := d.logits(b.ws, b.logits[:k*vocab], 0, k); err != nil {
		return d.wrap(err)
	}
	for j, i := range b.want {
		copy(steps[i].Logits, b.logits[j*vocab:(j+1)*vocab])
	}
	return nil
}

// Close implements Batch.
func (b *decoderBatch) Close() error {
	b.closed = true
	b.ws, b.logits = nil, nil
	return nil
}
