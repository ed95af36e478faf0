package runtime

import (
	"errors"
	"fmt"
)

// SessionBatch runs the next tokens of several sessions in one pass of their backend (a Batch):
// the decode steps of running generations and the prompt chunks of new ones together, so that
// every weight is read once per pass for all of them. Add queues a session's tokens; Run runs
// the pass. A SessionBatch is not safe for concurrent use, and its sessions must not be used
// elsewhere between Add and Run.
type SessionBatch struct {
	b        Batch
	seqs     int
	rows     int // the most tokens of one pass
	maxStep  int // the most tokens of one session in one pass
	steps    []BatchStep
	sessions []*Session
	queued   int // tokens queued
}

// ErrBatchFull is returned by SessionBatch.Add when the pass has no room for the tokens.
var ErrBatchFull = errors.New("runtime: the batch has no room for these tokens")

// NewSessionBatch allocates a pass of up to rows tokens from up to seqs sessions on backend b,
// which must implement Batcher and be the backend of every session added. maxStep is the most
// tokens one session may add to a pass (a prompt runs in chunks of at most that many), capped at
// the backend's PassTokens.
func NewSessionBatch(b Backend, rows, seqs, maxStep int) (*SessionBatch, error) {
	bt, ok := b.(Batcher)
	if !ok {
		return nil, fmt.Errorf("the %s backend cannot run several sequences in one pass", b.Name())
	}
	if maxStep <= 0 || maxStep > rows {
		return nil, fmt.Errorf("a batch step of %d tokens in passes of %d: expected 1 <= step <= rows", maxStep, rows)
	}
	maxStep = min(maxStep, bt.PassTokens())
	batch, err := bt.NewBatch(rows, seqs)
	if err != nil {
		return nil, err
	}
	return &SessionBatch{b: batch, seqs: seqs, rows: rows, maxStep: maxStep,
		steps: make([]BatchStep, 0, seqs), sessions: make([]*Session, 0, seqs)}, nil
}

// Room returns how many more tokens the next pass can take.
func (sb *SessionBatch) Room() int {
	if len(sb.steps) == sb.seqs {
		return 0
	}
	return sb.rows - sb.queued
}

// MaxStep returns the most tokens one session may add to a pass.
func (sb *SessionBatch) MaxStep() int { return sb.maxStep }

// Len returns the number of sessions queued for the next pass.
func (sb *SessionBatch) Len() int { return len(sb.steps) }

// Add queues tokens to run after s's cached sequence in the next pass; with logits, the
// session's Logits then follow them. It fails, queueing nothing, when the tokens would not fit
// the session's context or the vocabulary, when s is already queued, or with ErrBatchFull when
// the pass has no room (at most MaxStep tokens per session).
func (sb *SessionBatch) Add(s *Session, tokens []int, logits bool) error {
	if len(tokens) == 0 {
		return errors.New("runtime: SessionBatch.Add of no tokens")
	}
	if len(tokens) > sb.maxStep || len(tokens) > sb.Room() {
		return ErrBatchFull
	}
	if len(s.tokens)+len(tokens) > s.context {
		return &ContextError{Tokens: len(s.tokens) + len(tokens), Context: s.context, Max: s.model.Config.MaxPositionEmbeddings}
	}
	vocab := s.model.Config.VocabSize
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("token %d (at index %d) is outside the model's vocabulary [0, %d)", t, i, vocab)
		}
	}
	for _, q := range sb.sessions {
		if q == s {
			return errors.New("runtime: the session is already in the batch")
		}
	}
	st := BatchStep{State: s.state, Tokens: tokens, Pos: len(s.tokens)}
	if logits {
		st.Logits = s.logits
	}
	sb.steps = append(sb.steps, st)
	sb.sessions = append(sb.sessions, s)
	sb.queued += len(tokens)
	return nil
}

// Run runs the queued tokens in one pass and empties the queue. Afterwards each session's
// cached sequence ends with its tokens and, where Add asked for them, its Logits follow them.
// On an error no session has moved: each keeps its cached sequence (its logits are gone), so
// a later Prefill or Add continues from there.
func (sb *SessionBatch) Run() error {
	if len(sb.steps) == 0 {
		return nil
	}
	defer sb.reset()
	for _, s := range sb.sessions {
		s.valid = false
	}
	if err := sb.b.Forward(sb.steps); err != nil {
		return err
	}
	for i, s := range sb.sessions {
		st := sb.steps[i]
		s.tokens = append(s.tokens, st.Tokens...)
		s.valid = st.Logits != nil
	}
	return nil
}

// reset empties the queue, keeping no references to the sessions or their tokens.
func (sb *SessionBatch) reset() {
	clear(sb.steps)
	clear(sb.sessions)
	sb.steps, sb.sessions, sb.queued = sb.steps[:0], sb.sessions[:0], 0
}

// Close releases the pass's activations.
func (sb *SessionBatch) Close() error { return sb.b.Close() }
