package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/anepack/anepack/tokenizer"
)

// chatMessage is one turn of a conversation, as the chat template sees it.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// encodeRaw encodes plain text for completion the way transformers' tokenizer(text) does
// (add_special_tokens=True: a BOS where the tokenizer's post-processor adds one; none for Qwen).
func encodeRaw(tok *tokenizer.Tokenizer, text string) []int {
	return tok.EncodeWithSpecials(text, tokenizer.EncodeOptions{AddSpecialTokens: true})
}

// encodeChat renders msgs with the model's chat template, ending with the assistant's turn
// (add_generation_prompt), and encodes the result as transformers' apply_chat_template(...,
// tokenize=True) does: special tokens written by the template are recognised, nothing is added.
func encodeChat(tok *tokenizer.Tokenizer, msgs []chatMessage) ([]int, error) {
	text, err := renderChat(tok, msgs, true)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text), nil
}

// renderChat renders msgs with the model's chat template, as transformers'
// apply_chat_template(msgs, add_generation_prompt=gen, tokenize=False).
func renderChat(tok *tokenizer.Tokenizer, msgs []chatMessage, gen bool) (string, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	text, err := tok.ApplyChatTemplate(tm, tokenizer.ChatOptions{AddGenerationPrompt: gen})
	if errors.Is(err, tokenizer.ErrNoChatTemplate) {
		return "", fmt.Errorf("%w; use --raw to continue plain text", err)
	}
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return text, nil
}

// noTemplateNote is what anerun says, once, when a model without a chat template (GPT-2) is
// asked to chat: it continues the text instead, as --raw does.
const noTemplateNote = "anerun: this model has no chat template; continuing the prompt as plain text (as --raw)"

// rawIfNoTemplate switches to plain-text continuation when tok has no chat template, saying so on
// w; a --system message cannot be used then.
func (g *genFlags) rawIfNoTemplate(tok *tokenizer.Tokenizer, w io.Writer) error {
	if g.raw || tok.HasChatTemplate() {
		return nil
	}
	if g.system != "" {
		return errors.New("--system needs a chat template, and this model has none (it only continues text)")
	}
	g.raw = true
	fmt.Fprintln(w, noTemplateNote)
	return nil
}
