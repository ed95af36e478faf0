package runtime

import (
	"context"
	"time"
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
	g, err := s.NewGenerator(prompt, opts)
	if err != nil {
		return &Result{PromptTokens: len(prompt)}, err
	}
	g.res.Reused, err = s.Prefill(ctx, prompt)
	if err != nil {
		g.res.Prefill = time.Since(g.start)
		if ctx.Err() != nil {
			g.res.Reason = StopCancelled
		}
		return g.res, err
	}
	for {
		if ctx.Err() != nil {
			g.Cancel()
			break
		}
		id, more, err := g.Next()
		if err != nil {
			return g.res, err
		}
		if !more {
			break
		}
		if err := s.Append(id); err != nil {
			return g.res, err
		}
	}
	res, err := g.Finish()
	if err == nil && res.Reason == StopCancelled {
		err = ctx.Err()
	}
	return res, err
}
