package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/anepack/anepack/tokenizer"
)

// chatCompletions answers POST /v1/chat/completions: it renders the messages with the
// bundle's chat template (as transformers' apply_chat_template with add_generation_prompt),
// encodes the result and generates the assistant's reply.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, rec *record) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, rec, e)
		return
	}
	var req chatRequest
	if e := decodeBody(body, &req); e != nil {
		s.writeError(w, rec, e)
		return
	}
	pl, e := s.checkParams(&req.samplingParams)
	if e == nil {
		e = s.checkChatOnly(&req, pl)
	}
	var msgs []tokenizer.Message
	if e == nil {
		msgs, e = chatMessages(req.Messages)
	}
	var prompt []int
	if e == nil {
		prompt, e = s.renderMessages(msgs, pl.tools)
	}
	if e == nil {
		e = s.fit(pl, len(prompt), "messages")
	}
	if e != nil {
		s.writeError(w, rec, e)
		return
	}
	f := &chatFormat{id: "chatcmpl-" + rec.id, created: time.Now().Unix(), model: pl.model, usageNull: pl.includeUsage, tok: s.tok}
	s.generate(w, r, rec, pl, prompt, f)
}

// checkChatOnly checks the fields only chat completions have (log-probabilities, tools,
// response_format) into pl, and refuses what the server does not implement rather than
// answering something the client did not ask for.
func (s *Server) checkChatOnly(req *chatRequest, pl *plan) *apiError {
	want := req.Logprobs != nil && *req.Logprobs
	if t := req.TopLogprobs; t != nil {
		switch {
		case *t < 0 || *t > maxLogprobs:
			return badRequest("top_logprobs", "invalid_value", "top_logprobs is %d; expected 0 to %d", *t, maxLogprobs)
		case *t > 0 && !want:
			return badRequest("top_logprobs", "invalid_value", "top_logprobs needs logprobs set to true")
		}
	}
	if want {
		pl.logprobs = 0
		if req.TopLogprobs != nil {
			pl.logprobs = *req.TopLogprobs
		}
	}
	var e *apiError
	if pl.tools, e = s.parseTools(req); e != nil {
		return e
	}
	if pl.grammar, e = s.responseGrammar(req.ResponseFormat); e != nil {
		return e
	}
	pl.grammarParam = "response_format"
	if pl.tools.forced() {
		if pl.grammar != nil {
			return badRequest("response_format", "invalid_value", "response_format cannot be combined with a tool_choice that forces tool calls")
		}
		if pl.grammar, e = s.toolGrammar(pl.tools); e != nil {
			return e
		}
		pl.grammarParam = "tools"
	} else if pl.grammar != nil && pl.tools.parses() {
		return badRequest("response_format", "invalid_value", "response_format %q cannot be combined with tools the model may call; send tool_choice \"none\" or leave response_format out", req.ResponseFormat.Type)
	}
	if pl.grammar != nil && pl.opts.EOS != nil {
		return badRequest("ignore_eos", "invalid_value", "ignore_eos cannot be combined with constrained output (response_format or a forced tool_choice): the output ends when it is complete")
	}
	if pl.grammar != nil {
		// Stop strings apply outside the constrained span only, and with a grammar the whole
		// answer is that span: cut at a stop string it would be a prefix of JSON (or of a tool
		// call) reported as a clean stop. The grammar ends the answer when it is complete.
		pl.opts.Stop = nil
	}
	return nil
}

// isSet reports whether a raw JSON field holds something other than null or an empty array.
func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]"))
}

// chatMessages checks the conversation and turns it into the chat template's messages: content
// flattened to text, "developer" (OpenAI's newer name for system) as "system", an assistant's
// tool_calls and a tool message's tool_call_id (and name) as the extra keys templates read.
func chatMessages(in []chatMessage) ([]tokenizer.Message, *apiError) {
	if len(in) == 0 {
		return nil, badRequest("messages", "invalid_value", "messages is empty; expected at least one message")
	}
	out := make([]tokenizer.Message, len(in))
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		var extra *tokenizer.Object
		switch role {
		case "system", "user":
		case "assistant":
			if isSet(m.ToolCalls) {
				calls, e := toolCallsExtra(m.ToolCalls, param+".tool_calls")
				if e != nil {
					return nil, e
				}
				extra = tokenizer.NewObject("tool_calls", calls)
			}
		case "tool":
			if m.ToolCallID == nil {
				return nil, badRequest(param+".tool_call_id", "missing_required_parameter", "%s is a tool message without tool_call_id; it must name the call it answers", param)
			}
			extra = tokenizer.NewObject("tool_call_id", *m.ToolCallID)
		case "developer":
			role = "system"
		case "":
			return nil, badRequest(param+".role", "missing_required_parameter", "%s has no role; expected system, developer, user, assistant or tool", param)
		default:
			return nil, badRequest(param+".role", "invalid_value", "%s has role %q; this server understands system, developer, user, assistant and tool", param, m.Role)
		}
		if m.Name != nil && role != "assistant" {
			if extra == nil {
				extra = tokenizer.NewObject()
			}
			extra.Set("name", *m.Name)
		}
		text, e := contentText(m.Content, param+".content")
		if e != nil {
			return nil, e
		}
		out[i] = tokenizer.Message{Role: role, Content: text, Extra: extra}
	}
	return out, nil
}

// contentText returns a message's text: a string, null (empty) or an array of content parts,
// whose "text" parts are joined with newlines as vLLM does.
func contentText(raw json.RawMessage, param string) (string, *apiError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return "", nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return "", badRequest(param, "invalid_type", "%s is not a valid JSON string: %v", param, err)
		}
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(t, &parts); err != nil {
		return "", badRequest(param, "invalid_type", "%s: expected a string or an array of content parts", param)
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("%s[%d].type", param, i), "unsupported_value", "%s[%d] is a %q part; this model reads only \"text\" parts", param, i, p.Type)
		}
		if p.Text == nil {
			return "", badRequest(fmt.Sprintf("%s[%d].text", param, i), "missing_required_parameter", "%s[%d] has no text", param, i)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// chatFormat shapes chat completions and their chunks.
type chatFormat struct {
	id        string
	created   int64
	model     string
	usageNull bool // include_usage: every chunk carries "usage": null until the last
	tok       *tokenizer.Tokenizer
}

func (f *chatFormat) chunk(i int, delta chatDelta, finish *string, lp []tokenLogprob) *chatChunk {
	c := chatChunkChoice{Index: i, Delta: delta, FinishReason: finish}
	if lp != nil {
		c.Logprobs = chatLogprobsOf(f.tok, lp)
	}
	return &chatChunk{ID: f.id, Object: "chat.completion.chunk", Created: f.created, Model: f.model,
		Choices: []chatChunkChoice{c}, Usage: optionalUsage{Null: f.usageNull}}
}

func (f *chatFormat) start(i int) any {
	empty := ""
	return f.chunk(i, chatDelta{Role: "assistant", Content: &empty}, nil, nil)
}

func (f *chatFormat) delta(i int, e event) any {
	d := chatDelta{}
	if e.tool != nil {
		d.ToolCalls = []toolCallDelta{*e.tool}
	} else {
		d.Content = &e.text
	}
	return f.chunk(i, d, nil, e.lp)
}

func (f *chatFormat) end(i int, finish string, lp []tokenLogprob, ex *extras) any {
	c := f.chunk(i, chatDelta{}, &finish, lp)
	c.Anepack = ex
	return c
}

func (f *chatFormat) usage(u *usage) any {
	return &chatChunk{ID: f.id, Object: "chat.completion.chunk", Created: f.created, Model: f.model,
		Choices: []chatChunkChoice{}, Usage: optionalUsage{Usage: u}}
}

func (f *chatFormat) full(choices []choiceResult, u usage, ex *extras) any {
	out := &chatCompletion{ID: f.id, Object: "chat.completion", Created: f.created, Model: f.model,
		Choices: make([]chatChoice, 0, len(choices)), Usage: u, Anepack: ex}
	for _, c := range choices {
		msg := chatMessageOut{Role: "assistant", ToolCalls: c.calls}
		if c.text != "" || len(c.calls) == 0 {
			text := c.text
			msg.Content = &text
		}
		ch := chatChoice{Index: c.index, Message: msg, FinishReason: c.finish}
		if c.logprobs {
			ch.Logprobs = chatLogprobsOf(f.tok, c.lp)
		}
		out.Choices = append(out.Choices, ch)
	}
	return out
}
