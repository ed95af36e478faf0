package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/anepack/anepack/tokenizer"
)

// completions answers POST /v1/completions: the prompt is a string (encoded with the
// tokenizer's special-token handling, as Hugging Face's add_special_tokens=True) or an array
// of token ids, used as they are.
func (s *Server) completions(w http.ResponseWriter, r *http.Request, rec *record) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, rec, e)
		return
	}
	var req completionRequest
	if e := decodeBody(body, &req); e != nil {
		s.writeError(w, rec, e)
		return
	}
	pl, e := s.checkParams(&req.samplingParams)
	if e == nil {
		e = checkCompletionOnly(&req, pl)
	}
	var prompt []int
	if e == nil {
		prompt, e = s.completionPrompt(req.Prompt)
	}
	if e == nil {
		e = s.fit(pl, len(prompt), "prompt")
	}
	if e != nil {
		s.writeError(w, rec, e)
		return
	}
	f := &textFormat{id: "cmpl-" + rec.id, created: time.Now().Unix(), model: pl.model, usageNull: pl.includeUsage,
		tok: s.tok, offsets: make([]int, pl.n)}
	s.generate(w, r, rec, pl, prompt, f)
}

// checkCompletionOnly checks the fields only text completions have (legacy logprobs) into pl,
// and refuses those this server does not implement.
func checkCompletionOnly(req *completionRequest, pl *plan) *apiError {
	switch {
	case req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > maxLogprobs):
		return badRequest("logprobs", "invalid_value", "logprobs is %d; expected 0 to %d", *req.Logprobs, maxLogprobs)
	case req.Echo:
		return badRequest("echo", "unsupported_parameter", "echo is not supported by this server")
	case req.Suffix != nil && *req.Suffix != "":
		return badRequest("suffix", "unsupported_parameter", "suffix (fill-in-the-middle) is not supported by this server")
	case req.BestOf != nil && *req.BestOf != pl.n:
		return badRequest("best_of", "unsupported_value", "best_of is %d; this server returns every completion it generates, so best_of must equal n (%d)", *req.BestOf, pl.n)
	}
	if req.Logprobs != nil {
		pl.logprobs = *req.Logprobs
	}
	return nil
}

// completionPrompt turns OpenAI's prompt field into token ids. The API also allows a batch (an
// array of strings or of id arrays); one element is accepted, as a batch of one.
func (s *Server) completionPrompt(raw json.RawMessage) ([]int, *apiError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, badRequest("prompt", "missing_required_parameter", "you must give a prompt: a string or an array of token ids")
	}
	var text string
	if json.Unmarshal(t, &text) == nil {
		return s.tok.EncodeWithSpecials(text, tokenizer.EncodeOptions{AddSpecialTokens: true}), nil
	}
	var ids []int
	if json.Unmarshal(t, &ids) == nil {
		return ids, s.checkIDs(ids)
	}
	var texts []string
	if json.Unmarshal(t, &texts) == nil && len(texts) == 1 {
		return s.tok.EncodeWithSpecials(texts[0], tokenizer.EncodeOptions{AddSpecialTokens: true}), nil
	}
	var batch [][]int
	if json.Unmarshal(t, &batch) == nil && len(batch) == 1 {
		return batch[0], s.checkIDs(batch[0])
	}
	if len(texts) > 1 || len(batch) > 1 {
		return nil, badRequest("prompt", "unsupported_value", "prompt holds %d prompts; this server completes one prompt per request", max(len(texts), len(batch)))
	}
	return nil, badRequest("prompt", "invalid_type", "prompt: expected a string or an array of token ids")
}

// checkIDs refuses token ids outside the model's vocabulary.
func (s *Server) checkIDs(ids []int) *apiError {
	vocab := s.model.Config.VocabSize
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return badRequest("prompt", "invalid_value", "prompt token %d (at index %d) is outside the model's vocabulary of %d tokens", id, i, vocab)
		}
	}
	return nil
}

// textFormat shapes text completions and their chunks (which OpenAI also calls
// "text_completion").
type textFormat struct {
	id        string
	created   int64
	model     string
	usageNull bool
	tok       *tokenizer.Tokenizer
	offsets   []int // per choice: characters streamed so far, for text_offset
}

func (f *textFormat) chunk(i int, text string, finish *string, lp []tokenLogprob) *textCompletion {
	c := textChoice{Index: i, Text: text, FinishReason: finish}
	if lp != nil {
		c.Logprobs, f.offsets[i] = textLogprobsOf(f.tok, lp, f.offsets[i])
	}
	return &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: []textChoice{c}, Usage: optionalUsage{Null: f.usageNull}}
}

func (f *textFormat) start(int) any { return nil }

func (f *textFormat) delta(i int, e event) any { return f.chunk(i, e.text, nil, e.lp) }

func (f *textFormat) end(i int, finish string, lp []tokenLogprob, ex *extras) any {
	c := f.chunk(i, "", &finish, lp)
	c.Anepack = ex
	return c
}

func (f *textFormat) usage(u *usage) any {
	return &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: []textChoice{}, Usage: optionalUsage{Usage: u}}
}

func (f *textFormat) full(choices []choiceResult, u usage, ex *extras) any {
	out := &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: make([]textChoice, 0, len(choices)), Usage: optionalUsage{Usage: &u}, Anepack: ex}
	for _, c := range choices {
		ch := textChoice{Index: c.index, Text: c.text, FinishReason: &c.finish}
		if c.logprobs {
			ch.Logprobs, _ = textLogprobsOf(f.tok, c.lp, 0)
		}
		out.Choices = append(out.Choices, ch)
	}
	return out
}
