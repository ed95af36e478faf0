package runtime

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/anepack/anepack/tokenizer"
)

// Generator is one generation after its prompt: it picks each token from the logits that follow
// the session's sequence, turns tokens into text (stop strings withheld), and says when to stop.
// It does not run the model: Session.Generate runs each token it picks through Session.Append;
// a server runs the tokens of many generators through one SessionBatch. A Generator is not safe
// for concurrent use.
type Generator struct {
	s           *Session
	opts        GenerateOptions
	pick        func(logits []float32, history []int) int
	eos         []int
	dec         *tokenizer.StreamDecoder
	stop        *stopMatcher
	shown       strings.Builder
	res         *Result
	start       time.Time // when the generator was made: the prompt's processing starts
	decodeStart time.Time
	picked      bool // the first token was picked
	pending     bool // the last Next returned a token to run
	ended       bool
}

// NewGenerator prepares a generation after prompt on s. The caller runs the prompt (Prefill, or
// Reuse and then Extend or SessionBatch steps) and sets Result().Reused; from the first Next on,
// s's logits must be those that follow prompt and what the generator picked since.
func (s *Session) NewGenerator(prompt []int, opts GenerateOptions) (*Generator, error) {
	tok, err := s.model.Tokenizer()
	if err != nil {
		return nil, err
	}
	if opts.MaxTokens < 0 {
		return nil, errors.New("max tokens is negative; expected 0 (no limit) or more")
	}
	g := &Generator{s: s, opts: opts, pick: opts.Pick, eos: opts.EOS, start: time.Now(),
		res:  &Result{PromptTokens: len(prompt)},
		dec:  tok.NewStreamDecoder(tokenizer.DecodeOptions{SkipSpecialTokens: !opts.Special}),
		stop: newStopMatcher(opts.Stop)}
	if g.pick == nil {
		sampler, err := NewSampler(opts.Sampling, s.model.Config.VocabSize)
		if err != nil {
			return nil, err
		}
		g.pick = sampler.Sample
	}
	if g.eos == nil {
		g.eos = s.model.EOSIDs()
	}
	return g, nil
}

// Result returns the generation's result so far (final after Finish).
func (g *Generator) Result() *Result { return g.res }

// Next picks the next token from the session's logits. When it returns more, id must be run
// next (appended to the session's sequence) before Next is called again; otherwise the
// generation has ended and Result says why: an eos id, a stop string, MaxTokens, or the end of
// the session's context. An error from OnText ends it too and is returned.
func (g *Generator) Next() (id int, more bool, err error) {
	if g.ended {
		return 0, false, nil
	}
	res, s := g.res, g.s
	now := time.Now()
	if !g.picked {
		res.Prefill = now.Sub(g.start)
	}
	if g.pending {
		res.DecodeSteps++ // the token the last call returned has been run
		g.pending = false
	}
	id = g.pick(s.Logits(), s.tokens)
	if !g.picked {
		g.picked = true
		res.FirstTokenAt = time.Now()
		res.TTFT = res.FirstTokenAt.Sub(g.start)
		g.decodeStart = res.FirstTokenAt
	}
	if slices.Contains(g.eos, id) {
		return 0, false, g.end(StopEOS)
	}
	res.Tokens = append(res.Tokens, id)
	text, stopped := g.stop.push(g.dec.Add(id))
	if err := g.show(text); err != nil {
		g.ended = true
		res.Text = g.shown.String()
		return 0, false, err
	}
	switch {
	case stopped:
		return 0, false, g.end(StopString)
	case g.opts.MaxTokens > 0 && len(res.Tokens) >= g.opts.MaxTokens:
		return 0, false, g.end(StopLength)
	case len(s.tokens) >= s.context:
		return 0, false, g.end(StopContext)
	}
	g.pending = true
	return id, true, nil
}

// Cancel ends the generation as cancelled (its request went away between tokens, after the
// token the last Next returned was run).
func (g *Generator) Cancel() {
	if g.pending {
		g.res.DecodeSteps++
		g.pending = false
	}
	if !g.ended {
		g.res.Reason = StopCancelled
		g.ended = true
	}
}

// end records why generation ended.
func (g *Generator) end(reason StopReason) error {
	g.res.Reason, g.ended = reason, true
	return nil
}

// Finish completes the result: the decode time, and the text the stream decoder and the stop
// matcher held back (final now), shown through OnText unless a stop string ended generation.
// An error from OnText is returned with the result.
func (g *Generator) Finish() (*Result, error) {
	res := g.res
	g.ended = true
	if !g.decodeStart.IsZero() {
		res.Decode = time.Since(g.decodeStart)
	}
	var err error
	if res.Reason != StopString {
		text, stopped := g.stop.push(g.dec.Flush())
		if !stopped {
			text += g.stop.flush()
		}
		err = g.show(text)
	}
	res.Text = g.shown.String()
	return res, err
}

// show records text and passes it to OnText.
func (g *Generator) show(text string) error {
	if text == "" {
		return nil
	}
	g.shown.WriteString(text)
	if g.opts.OnText != nil {
		return g.opts.OnText(text)
	}
	return nil
}
