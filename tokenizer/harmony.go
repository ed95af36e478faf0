package tokenizer

import (
	_ "embed" // the built-in harmony chat template
)

// harmonyTemplate is the harmony chat format of gpt-oss (harmony.jinja), the chat template a
// tokenizer with the harmony control tokens gets when its checkpoint carries none: the
// o200k_harmony tokenizer as npm and some conversions ship it has no template, and a
// gpt-oss model without one could not be chatted with.
//
//go:embed harmony.jinja
var harmonyTemplate string

// harmonyTokens are the control tokens the harmony format writes; a tokenizer whose special
// tokens include all of them is taken to be a harmony model's.
var harmonyTokens = []string{"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"}

// HarmonyChatTemplate returns the built-in harmony chat template (see [CompileOptions]).
func HarmonyChatTemplate() string { return harmonyTemplate }

// hasHarmonyTokens reports whether every harmony control token is a special added token.
func hasHarmonyTokens(added []addedSpec) bool {
	special := make(map[string]bool, len(added))
	for _, a := range added {
		if a.flags&addSpecial != 0 {
			special[a.content] = true
		}
	}
	for _, t := range harmonyTokens {
		if !special[t] {
			return false
		}
	}
	return true
}
