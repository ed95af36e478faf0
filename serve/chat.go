package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
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
		e = checkChatOnly(&req)
	}
	var msgs []templateMessage
	if e == nil {
		msgs, e = chatMessages(req.Messages)
	}
	var prompt []int
	if e == nil {
		prompt, e = s.renderChat(msgs)
	}
	if e == nil {
		e = s.fit(pl, len(prompt), "messages")
	}
	if e != nil {
		s.writeError(w, rec, e)
		return
	}
	f := &chatFormat{id: "chatcmpl-" + rec.id, created: time.Now().Unix(), model: pl.model, usageNull: pl.includeUsage}
	s.generate(w, r, rec, pl, prompt, f)
}

// checkChatOnly refuses the chat fields this server does not implement, rather than ignoring
// them and answering something the client did not ask for.
func checkChatOnly(req *chatRequest) *apiError {
	if req.Logprobs != nil && *req.Logprobs {
		return badRequest("logprobs", "unsupported_parameter", "logprobs are not supported by this server")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return badRequest("top_logprobs", "unsupported_parameter", "top_logprobs are not supported by this server")
	}
	if isSet(req.Tools) {
		return badRequest("tools", "unsupported_parameter", "tool calling is not supported by this server")
	}
	if isSet(req.Functions) {
		return badRequest("functions", "unsupported_parameter", "function calling is not supported by this server")
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return badRequest("response_format", "unsupported_parameter", "response_format %q is not supported by this server (only \"text\")", rf.Type)
	}
	return nil
}

// isSet reports whether a raw JSON field holds something other than null or an empty array.
func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]"))
}

// chatMessages checks the conversation and flattens each message's content to text.
// "developer" (OpenAI's newer name for system) becomes "system".
func chatMessages(in []chatMessage) ([]templateMessage, *apiError) {
	if len(in) == 0 {
		return nil, badRequest("messages", "invalid_value", "messages is empty; expected at least one message")
	}
	out := make([]templateMessage, len(in))
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "system", "user", "assistant":
		case "developer":
			role = "system"
		case "":
			return nil, badRequest(param+".role", "missing_required_parameter", "%s has no role; expected system, user or assistant", param)
		default:
			return nil, badRequest(param+".role", "invalid_value", "%s has role %q; this server understands system, developer, user and assistant", param, m.Role)
		}
		text, e := contentText(m.Content, param+".content")
		if e != nil {
			return nil, e
		}
		out[i] = templateMessage{Role: role, Content: text}
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
}

func (f *chatFormat) chunk(delta chatDelta, finish *string) *chatChunk {
	return &chatChunk{ID: f.id, Object: "chat.completion.chunk", Created: f.created, Model: f.model,
		Choices: []chatChunkChoice{{Delta: delta, FinishReason: finish}}, Usage: optionalUsage{Null: f.usageNull}}
}

func (f *chatFormat) start() any {
	empty := ""
	return f.chunk(chatDelta{Role: "assistant", Content: &empty}, nil)
}

func (f *chatFormat) piece(text string) any { return f.chunk(chatDelta{Content: &text}, nil) }

func (f *chatFormat) end(finish string, ex *extras) any {
	c := f.chunk(chatDelta{}, &finish)
	c.Anepack = ex
	return c
}

func (f *chatFormat) usage(u *usage) any {
	return &chatChunk{ID: f.id, Object: "chat.completion.chunk", Created: f.created, Model: f.model,
		Choices: []chatChunkChoice{}, Usage: optionalUsage{Usage: u}}
}

func (f *chatFormat) full(text, finish string, u usage, ex *extras) any {
	return &chatCompletion{ID: f.id, Object: "chat.completion", Created: f.created, Model: f.model,
		Choices: []chatChoice{{Message: chatMessageOut{Role: "assistant", Content: text}, FinishReason: finish}},
		Usage:   u, Anepack: ex}
}
