package runtime

import (
	"context"
	"errors"
	"fmt"
)

// DefaultContext is the context length a session gets when none is asked for (capped at the
// model's max_position_embeddings), like llama.cpp's default.
const DefaultContext = 4096

// prefillChunk is how many prompt tokens go to the backend per call: one batched forward each,
// and a chance to notice cancellation between them.
const prefillChunk = 128

// ErrEmptyPrompt is returned for a prompt of no tokens: there is nothing to predict from.
var ErrEmptyPrompt = errors.New("the prompt is empty: give at least one token")

// ContextError reports a sequence that does not fit the session's context.
type ContextError struct {
	Tokens  int // tokens the sequence needs
	Context int // the session's context length
	Max     int // the model's max_position_embeddings
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("%d tokens do not fit the context of %d tokens (the model allows up to %d; raise --ctx or shorten the prompt)",
		e.Tokens, e.Context, e.Max)
}

// Session is one conversation with a model on a backend: the backend's state (the KV cache of
// every token so far) and the tokens it holds. A new prompt that starts with tokens already
// cached reuses them, so a chat only computes each turn's new tokens. A Session is not safe for
// concurrent use.
type Session struct {
	model   *Model
	state   State
	context int
	tokens  []int     // the cached sequence; its keys and values are in state
	logits  []float32 // [vocab] logits after the last cached token, when valid
	valid   bool
	one     [1]int
}

// NewSession allocates a session of contextLen tokens (0 means DefaultContext, capped at the
// model's maximum) on backend b. A contextLen above max_position_embeddings is an error.
func NewSession(m *Model, b Backend, contextLen int) (*Session, error) {
	maxCtx := m.Config.MaxPositionEmbeddings
	switch {
	case contextLen == 0:
		contextLen = min(DefaultContext, maxCtx)
	case contextLen < 0:
		return nil, fmt.Errorf("context of %d tokens: expected a positive number", contextLen)
	case contextLen > maxCtx:
		return nil, fmt.Errorf("context of %d tokens exceeds the model's maximum of %d (max_position_embeddings)", contextLen, maxCtx)
	}
	st, err := b.NewState(contextLen)
	if err != nil {
		return nil, err
	}
	return &Session{model: m, state: st, context: contextLen,
		tokens: make([]int, 0, contextLen), logits: make([]float32, m.Config.VocabSize)}, nil
}

// Close releases the backend state.
func (s *Session) Close() error { return s.state.Close() }

// Model returns the session's model.
func (s *Session) Model() *Model { return s.model }

// Context returns the session's context length in tokens.
func (s *Session) Context() int { return s.context }

// StateBytes returns the memory the backend holds for the session's state (Sizer), or 0 when
// the backend does not say.
func (s *Session) StateBytes() int64 {
	if sz, ok := s.state.(Sizer); ok {
		return sz.Bytes()
	}
	return 0
}

// Tokens returns the cached sequence (read-only; valid until the next call).
func (s *Session) Tokens() []int { return s.tokens }

// Logits returns the logits that follow the cached sequence ([vocab], read-only), or nil when
// there are none (an empty session).
func (s *Session) Logits() []float32 {
	if !s.valid {
		return nil
	}
	return s.logits
}

// Reset forgets the cached sequence.
func (s *Session) Reset() {
	s.tokens = s.tokens[:0]
	s.valid = false
}

// Prefill makes the cached sequence equal to prompt and computes the logits that follow it.
// The longest prefix shared with the current sequence is reused; the rest runs through the
// backend in batches. It returns how many tokens were reused. ctx is checked between batches:
// on cancellation the session keeps the tokens processed so far.
func (s *Session) Prefill(ctx context.Context, prompt []int) (reused int, err error) {
	if len(prompt) > 0 && len(prompt) == len(s.tokens) && s.valid && commonPrefix(s.tokens, prompt) == len(prompt) {
		return len(prompt), nil // already there, logits included
	}
	n, err := s.Reuse(prompt)
	if err != nil {
		return 0, err
	}
	reused = n
	for n < len(prompt) {
		if err := ctx.Err(); err != nil {
			return reused, err
		}
		end := min(len(prompt), n+prefillChunk)
		var out []float32
		if end == len(prompt) {
			out = s.logits
		}
		if err := s.state.Forward(prompt[n:end], n, out); err != nil {
			return reused, err
		}
		s.tokens = append(s.tokens, prompt[n:end]...)
		n = end
	}
	s.valid = true
	return reused, nil
}

// Reuse begins a prefill of prompt that the caller runs itself (through Extend, or the steps of
// a SessionBatch): it checks prompt, cuts the cached sequence back to the longest prefix of
// prompt the backend can continue from, and returns its length. It always leaves at least the
// last token of prompt to run, since its logits are what generation starts from.
func (s *Session) Reuse(prompt []int) (int, error) {
	if len(prompt) == 0 {
		return 0, ErrEmptyPrompt
	}
	if len(prompt) > s.context {
		return 0, &ContextError{Tokens: len(prompt), Context: s.context, Max: s.model.Config.MaxPositionEmbeddings}
	}
	vocab := s.model.Config.VocabSize
	for i, t := range prompt {
		if t < 0 || t >= vocab {
			return 0, fmt.Errorf("prompt token %d (at index %d) is outside the model's vocabulary [0, %d)", t, i, vocab)
		}
	}
	n := min(commonPrefix(s.tokens, prompt), len(prompt)-1)
	if r, ok := s.state.(Resumer); ok {
		n = r.ResumeAt(n)
	}
	s.tokens, s.valid = s.tokens[:n], false
	return n, nil
}

// Append runs one token after the cached sequence (a decode step) and computes the logits that
// follow it. It does not allocate.
func (s *Session) Append(token int) error {
	if len(s.tokens) >= s.context {
		return &ContextError{Tokens: len(s.tokens) + 1, Context: s.context, Max: s.model.Config.MaxPositionEmbeddings}
	}
	if vocab := s.model.Config.VocabSize; token < 0 || token >= vocab {
		return fmt.Errorf("token %d is outside the model's vocabulary [0, %d)", token, vocab)
	}
	s.one[0] = token
	s.valid = false
	if err := s.state.Forward(s.one[:], len(s.tokens), s.logits); err != nil {
		return err
	}
	s.tokens = append(s.tokens, token)
	s.valid = true
	return nil
}

// Extend runs tokens after the cached sequence as one batch (however long: the backend splits it)
// and writes the logits of the last len(logits)/vocab of them, row after row, into logits — the
// way to see the model's predictions at every position of a prompt. Logits then returns the last
// row, when logits holds at least one.
func (s *Session) Extend(tokens []int, logits []float32) error {
	vocab := s.model.Config.VocabSize
	if len(s.tokens)+len(tokens) > s.context {
		return &ContextError{Tokens: len(s.tokens) + len(tokens), Context: s.context, Max: s.model.Config.MaxPositionEmbeddings}
	}
	for i, t := range tokens {
		if t < 0 || t >= vocab {
			return fmt.Errorf("token %d (at index %d) is outside the model's vocabulary [0, %d)", t, i, vocab)
		}
	}
	if len(tokens) == 0 {
		return nil
	}
	s.valid = false
	if err := s.state.Forward(tokens, len(s.tokens), logits); err != nil {
		return err
	}
	s.tokens = append(s.tokens, tokens...)
	if len(logits) >= vocab {
		copy(s.logits, logits[len(logits)-vocab:])
		s.valid = true
	}
	return nil
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
