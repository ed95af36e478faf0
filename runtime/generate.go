package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/anepack/anepack/tokenizer"
)

// GenerateOptions controls Generate.
type GenerateOptions struct {
	// MaxTokens bounds the generated tokens; 0 means until an eos id, a stop string or the end
	// of the context.
	MaxTokens int
	// Sampling chooses each token; see DefaultSampling for the model's own defaults.
	Sampling Sampling
	// EOS lists the ids that end generation (they are not part of the output); nil means the
	// model's (Model.EOSIDs).
	EOS []int
	// Stop lists strings that end generation: the text up to the first occurrence is shown,
	// the stop string and anything after it are not.
	Stop []string
	// Special shows special tokens (<|im_start|>, ...) in the text; by default they are skipped,
	// like transformers' decode(skip_special_tokens=True).
	Special bool
	// Pick, when set, chooses each token instead of a Sampler built from Sampling (which is then
	// unused): it gets the logits that follow the sequence so far ([vocab], read-only, valid
	// during the call) and that sequence (prompt and generated tokens). Choosing a token is kept
	// apart from computing the logits so that what depends on the one sequence — a grammar mask,
	// penalties, log-probabilities — stays with it, whoever computes the logits.
	Pick func(logits []float32, history []int) int
	// OnText receives the text as it is decoded (complete UTF-8 characters only, stop strings
	// withheld). An error from it stops generation and is returned.
	OnText func(text string) error
}

// StopReason says why generation ended.
type StopReason string

// Why generation ends.
const (
	StopEOS       StopReason = "eos"       // the model produced an eos id
	StopString    StopReason = "stop"      // a stop string appeared
	StopLength    StopReason = "length"    // MaxTokens were generated
	StopContext   StopReason = "context"   // the context is full
	StopCancelled StopReason = "cancelled" // the context.Context was cancelled
)

// Result describes one generation.
type Result struct {
	Tokens       []int      // the generated ids, without the final eos id
	Text         string     // the text shown through OnText
	Reason       StopReason // why it ended
	PromptTokens int        // tokens of the prompt
	Reused       int        // prompt tokens whose keys and values were already cached
	// Prefill is the time to process the prompt's new tokens; TTFT the time from the call to
	// the first sampled token; Decode the time of the decode steps (forward and sampling) after
	// it, of which there were DecodeSteps.
	Prefill, TTFT, Decode time.Duration
	DecodeSteps           int
	// FirstTokenAt is when the first token was sampled, for measuring from the start of a
	// process.
	FirstTokenAt time.Time
}

// PrefillTokensPerSecond returns the prompt tokens computed (not reused) per second.
func (r *Result) PrefillTokensPerSecond() float64 {
	return perSecond(r.PromptTokens-r.Reused, r.Prefill)
}

// DecodeTokensPerSecond returns the decode steps per second.
func (r *Result) DecodeTokensPerSecond() float64 { return perSecond(r.DecodeSteps, r.Decode) }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate continues prompt: it prefills it (reusing the cached prefix), then samples tokens one
// at a time, streaming their text to opts.OnText, until an eos id, a stop string, MaxTokens or
// the end of the context. Cancelling ctx stops it between tokens: the result so far is returned
// with Reason StopCancelled and ctx's error. The generated tokens stay cached (except the last
// one sampled, which was never run), so the next prompt of a chat reuses them.
func (s *Session) Generate(ctx context.Context, prompt []int, opts GenerateOptions) (*Result, error) {
	start := time.Now()
	res := &Result{PromptTokens: len(prompt)}
	tok, err := s.model.Tokenizer()
	if err != nil {
		return res, err
	}
	pick := opts.Pick
	if pick == nil {
		sampler, err := NewSampler(opts.Sampling, s.model.Config.VocabSize)
		if err != nil {
			return res, err
		}
		pick = sampler.Sample
	}
	if opts.MaxTokens < 0 {
		return res, errors.New("max tokens is negative; expected 0 (no limit) or more")
	}
	eos := opts.EOS
	if eos == nil {
		eos = s.model.EOSIDs()
	}
	res.Reused, err = s.Prefill(ctx, prompt)
	res.Prefill = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			res.Reason = StopCancelled
		}
		return res, err
	}
	dec := tok.NewStreamDecoder(tokenizer.DecodeOptions{SkipSpecialTokens: !opts.Special})
	stop := newStopMatcher(opts.Stop)
	var shown strings.Builder
	defer func() { res.Text = shown.String() }()
	show := func(text string) error {
		if text == "" {
			return nil
		}
		shown.WriteString(text)
		if opts.OnText != nil {
			return opts.OnText(text)
		}
		return nil
	}
	var decodeStart time.Time
	for {
		if ctx.Err() != nil {
			res.Reason = StopCancelled
			break
		}
		id := pick(s.Logits(), s.tokens)
		if res.FirstTokenAt.IsZero() {
			res.FirstTokenAt = time.Now()
			res.TTFT = res.FirstTokenAt.Sub(start)
			decodeStart = res.FirstTokenAt
		}
		if slices.Contains(eos, id) {
			res.Reason = StopEOS
			break
		}
		res.Tokens = append(res.Tokens, id)
		text, stopped := stop.push(dec.Add(id))
		if err := show(text); err != nil {
			return res, err
		}
		if stopped {
			res.Reason = StopString
			break
		}
		if opts.MaxTokens > 0 && len(res.Tokens) >= opts.MaxTokens {
			res.Reason = StopLength
			break
		}
		if len(s.tokens) >= s.context {
			res.Reason = StopContext
			break
		}
		if err := s.Append(id); err != nil {
			return res, err
		}
		res.DecodeSteps++
	}
	if !decodeStart.IsZero() {
		res.Decode = time.Since(decodeStart)
	}
	if res.Reason != StopString {
		// The decoder's held-back bytes and the matcher's held-back text are final now.
		text, stopped := stop.push(dec.Flush())
		if !stopped {
			text += stop.flush()
		}
		if err := show(text); err != nil {
			return res, err
		}
	}
	if res.Reason == StopCancelled {
		return res, ctx.Err()
	}
	return res, nil
}
