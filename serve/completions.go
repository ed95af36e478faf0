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
		e = checkCompletionOnly(&req)
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
	f := &textFormat{id: "cmpl-" + rec.id, created: time.Now().Unix(), model: pl.model, usageNull: pl.includeUsage}
	s.generate(w, r, rec, pl, prompt, f)
}

// checkCompletionOnly refuses the completion fields this server does not implement.
func checkCompletionOnly(req *completionRequest) *apiError {
	switch {
	case req.Logprobs != nil:
		return badRequest("logprobs", "unsupported_parameter", "logprobs are not supported by this server")
	case req.Echo:
		return badRequest("echo", "unsupported_parameter", "echo is not supported by this server")
	case req.Suffix != nil && *req.Suffix != "":
		return badRequest("suffix", "unsupported_parameter", "suffix (fill-in-the-middle) is not supported by this server")
	case req.BestOf != nil && *req.BestOf != 1:
		return badRequest("best_of", "unsupported_value", "best_of is %d; this server generates one completion per request (best_of must be 1)", *req.BestOf)
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
}

func (f *textFormat) chunk(text string, finish *string) *textCompletion {
	return &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: []textChoice{{Text: text, FinishReason: finish}}, Usage: optionalUsage{Null: f.usageNull}}
}

func (f *textFormat) start() any { return nil }

func (f *textFormat) piece(text string) any { return f.chunk(text, nil) }

func (f *textFormat) end(finish string, ex *extras) any {
	c := f.chunk("", &finish)
	c.Anepack = ex
	return c
}

func (f *textFormat) usage(u *usage) any {
	return &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: []textChoice{}, Usage: optionalUsage{Usage: u}}
}

func (f *textFormat) full(text, finish string, u usage, ex *extras) any {
	return &textCompletion{ID: f.id, Object: "text_completion", Created: f.created, Model: f.model,
		Choices: []textChoice{{Text: text, FinishReason: &finish}}, Usage: optionalUsage{Usage: &u}, Anepack: ex}
}
