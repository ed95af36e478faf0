package main

import (
	"strings"
	"testing"
)

// TestTokenizerLinesBuiltinTemplate: inspect says when the chat template is anepack's own
// rather than the checkpoint's.
func TestTokenizerLinesBuiltinTemplate(t *testing.T) {
	own := strings.Join(tokenizerLines([]byte(`{"has_chat_template": true, "chat_templates": ["default"]}`)), "\n")
	builtin := strings.Join(tokenizerLines([]byte(`{"has_chat_template": true, "chat_templates": ["default"], "builtin_chat_template": "harmony"}`)), "\n")
	if !strings.Contains(own, "chat templates: default") || strings.Contains(own, "built-in") {
		t.Errorf("checkpoint's template: %q", own)
	}
	if !strings.Contains(builtin, "chat templates: default (anepack's built-in harmony template: the checkpoint has none)") {
		t.Errorf("built-in template: %q", builtin)
	}
}
