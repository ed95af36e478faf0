package serve

import (
	"errors"

	"github.com/anepack/anepack/tokenizer"
)

// templateMessage is one message with its content flattened to text (tests build these).
type templateMessage struct {
	Role    string
	Content string
}

// renderChat renders plain messages; see renderMessages.
func (s *Server) renderChat(msgs []templateMessage) ([]int, *apiError) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	return s.renderMessages(tm, nil)
}

// renderMessages renders messages (and the request's tools, when it has any) with the bundle's
// chat template, as transformers' apply_chat_template(messages, tools=...,
// add_generation_prompt=True) does, and encodes the text the way transformers then tokenizes
// it (special tokens written by the template are recognised; nothing is added). A template that
// refuses the conversation (raise_exception, e.g. for roles out of order) is the client's error.
func (s *Server) renderMessages(msgs []tokenizer.Message, tools *toolSetup) ([]int, *apiError) {
	opts := tokenizer.ChatOptions{AddGenerationPrompt: true}
	if tools != nil {
		opts.Tools = tools.objs
	}
	text, err := s.tok.ApplyChatTemplate(msgs, opts)
	switch {
	case errors.Is(err, tokenizer.ErrNoChatTemplate):
		return nil, badRequest("messages", "no_chat_template", "this model has no chat template, so it cannot take chat messages; use /v1/completions with a prompt")
	case err != nil:
		return nil, badRequest("messages", "invalid_value", "the model's chat template refused the messages: %v", err)
	}
	return s.tok.Encode(text), nil
}
