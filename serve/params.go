package serve

import (
	"math"
	"math/rand/v2"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/serve/grammar"
)

// maxStops bounds the stop strings of one request (OpenAI allows 4; vLLM any number). Each
// costs a scan of the held-back text per token, so the bound keeps a request from slowing its
// own decode loop without limit.
const maxStops = 16

// maxStopLen bounds one stop string in bytes, for the same reason.
const maxStopLen = 1024

// maxChoices bounds n. The choices of one request run one after the other on one session
// (each reuses the cached prompt), so n multiplies the time a request holds it.
const maxChoices = 16

// plan is a validated generation request: everything Session.Generate needs but the prompt.
type plan struct {
	model        string // the model id to echo in responses
	stream       bool
	includeUsage bool
	// maxTokens is the request's max_completion_tokens (or max_tokens); 0 when absent.
	maxTokens int
	// defaultMax is the bundle's max_new_tokens, used when the request gives no limit.
	defaultMax int
	opts       runtime.GenerateOptions
	// n choices; choice i samples with seed+i (a random seed each when none is given).
	n      int
	seeded bool
	// logprobs is how many alternatives each token's log-probability comes with (-1: none).
	logprobs int
	// grammar constrains the output (response_format or forced tool calls); nil: free text.
	// grammarParam names the request field it came from, for errors met while generating.
	grammar      *grammar.Grammar
	grammarParam string
	// tools are a chat request's tools (nil: none).
	tools *toolSetup
}

// seed returns the sampling seed of choice i.
func (pl *plan) seed(i int) uint64 {
	if pl.seeded {
		return pl.opts.Sampling.Seed + uint64(i)
	}
	if i == 0 {
		return pl.opts.Sampling.Seed
	}
	return rand.Uint64()
}

// checkParams validates the fields shared by both completion endpoints and turns them into a
// plan. Absent sampling fields take the bundle's generation defaults (what transformers'
// generate would do with this model), not OpenAI's temperature 1; a request that sets
// temperature 0 decodes greedily.
func (s *Server) checkParams(p *samplingParams) (*plan, *apiError) {
	if p.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "you must give the model; this server serves %q", s.modelID)
	}
	if !s.knownModel(p.Model) {
		return nil, modelNotFound(p.Model, s.modelID)
	}
	pl := &plan{model: s.modelID, stream: p.Stream, includeUsage: p.StreamOptions != nil && p.StreamOptions.IncludeUsage, n: 1, logprobs: -1}
	if p.N != nil {
		if *p.N < 1 || *p.N > maxChoices {
			return nil, badRequest("n", "invalid_value", "n is %d; expected 1 to %d choices", *p.N, maxChoices)
		}
		pl.n = *p.N
	}
	if p.StreamOptions != nil && !p.Stream {
		return nil, badRequest("stream_options", "invalid_value", "stream_options is only allowed when stream is true")
	}

	switch {
	case p.MaxCompletionTokens != nil:
		if *p.MaxCompletionTokens < 1 {
			return nil, badRequest("max_completion_tokens", "invalid_value", "max_completion_tokens is %d; expected an integer >= 1", *p.MaxCompletionTokens)
		}
		pl.maxTokens = *p.MaxCompletionTokens
	case p.MaxTokens != nil:
		if *p.MaxTokens < 1 {
			return nil, badRequest("max_tokens", "invalid_value", "max_tokens is %d; expected an integer >= 1", *p.MaxTokens)
		}
		pl.maxTokens = *p.MaxTokens
	default:
		if g := s.model.Generation().MaxNewTokens; g != nil && *g > 0 {
			pl.defaultMax = *g
		}
	}

	smp := runtime.DefaultSampling(s.model.Generation())
	if v := p.Temperature; v != nil {
		if math.IsNaN(*v) || *v < 0 || *v > 2 {
			return nil, badRequest("temperature", "invalid_value", "temperature is %v; expected a number from 0 to 2", *v)
		}
		smp.Temperature = *v
	}
	if v := p.TopP; v != nil {
		if math.IsNaN(*v) || *v <= 0 || *v > 1 {
			return nil, badRequest("top_p", "invalid_value", "top_p is %v; expected a number greater than 0 and at most 1", *v)
		}
		smp.TopP = *v
	}
	if v := p.TopK; v != nil {
		if *v < -1 {
			return nil, badRequest("top_k", "invalid_value", "top_k is %d; expected -1 or 0 (off) or a positive integer", *v)
		}
		smp.TopK = max(*v, 0)
	}
	if v := p.MinP; v != nil {
		if math.IsNaN(*v) || *v < 0 || *v > 1 {
			return nil, badRequest("min_p", "invalid_value", "min_p is %v; expected a number from 0 to 1", *v)
		}
		smp.MinP = *v
	}
	if v := p.RepetitionPenalty; v != nil {
		if math.IsNaN(*v) || *v <= 0 || *v > 10 {
			return nil, badRequest("repetition_penalty", "invalid_value", "repetition_penalty is %v; expected a number greater than 0 and at most 10 (1 is off)", *v)
		}
		smp.RepetitionPenalty = *v
	}
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"presence_penalty", p.PresencePenalty, &smp.PresencePenalty}, {"frequency_penalty", p.FrequencyPenalty, &smp.FrequencyPenalty}} {
		if f.v == nil {
			continue
		}
		if math.IsNaN(*f.v) || *f.v < -2 || *f.v > 2 {
			return nil, badRequest(f.name, "invalid_value", "%s is %v; expected a number from -2 to 2", f.name, *f.v)
		}
		*f.dst = *f.v
	}
	if len(p.LogitBias) > 0 {
		return nil, badRequest("logit_bias", "unsupported_parameter", "logit_bias is not supported by this server")
	}
	if p.Seed != nil {
		smp.Seed = uint64(*p.Seed) // a negative seed is as good a seed as any: keep its bits
		pl.seeded = true
	} else {
		smp.Seed = rand.Uint64()
	}
	if err := smp.Check(); err != nil { // the ranges above imply this; it guards the mapping
		return nil, badRequest("", "invalid_value", "%v", err)
	}

	if len(p.Stop) > maxStops {
		return nil, badRequest("stop", "invalid_value", "stop has %d strings; at most %d are allowed", len(p.Stop), maxStops)
	}
	for i, st := range p.Stop {
		if len(st) > maxStopLen {
			return nil, badRequest("stop", "invalid_value", "stop string %d is %d bytes long; at most %d are allowed", i, len(st), maxStopLen)
		}
	}
	pl.opts = runtime.GenerateOptions{Sampling: smp, Stop: p.Stop}
	if p.IgnoreEOS {
		pl.opts.EOS = []int{} // not nil: nil means the model's eos ids
	}
	return pl, nil
}

// fit sets the generation budget once the prompt's length is known. Like OpenAI, a prompt
// whose requested completion does not fit the context is refused rather than cut short; with no
// max_tokens the completion may use the rest of the context (or the bundle's max_new_tokens,
// if smaller).
func (s *Server) fit(pl *plan, promptTokens int, param string) *apiError {
	ctx := s.context
	if promptTokens == 0 {
		return badRequest(param, "invalid_value", "the prompt is empty; give at least one token")
	}
	want := max(pl.maxTokens, 1)
	if want > ctx-promptTokens { // not promptTokens+want > ctx: max_tokens may be near 2^63
		if pl.maxTokens == 0 {
			return badRequest(param, "context_length_exceeded",
				"this model's context is %d tokens per request, but the prompt has %d tokens and leaves no room for a completion; shorten the prompt (or restart the server with a larger --ctx)",
				ctx, promptTokens)
		}
		return badRequest(param, "context_length_exceeded",
			"this model's context is %d tokens per request, but %d were requested (%d in the prompt, %d for the completion); shorten the prompt or lower max_tokens",
			ctx, uint64(promptTokens)+uint64(pl.maxTokens), promptTokens, pl.maxTokens)
	}
	pl.opts.MaxTokens = pl.maxTokens
	if pl.maxTokens == 0 {
		pl.opts.MaxTokens = ctx - promptTokens
		if pl.defaultMax > 0 {
			pl.opts.MaxTokens = min(pl.opts.MaxTokens, pl.defaultMax)
		}
	}
	return nil
}
