package toolcall

import (
	"fmt"
	"strings"
)

// Format is a family's way of writing tool calls.
type Format int

// The formats. None means the model has no known tool-call form.
const (
	None Format = iota
	Hermes
	Llama3JSON
)

// Names as anerun serve's --tool-call-parser takes them (vLLM's names).
func (f Format) String() string {
	switch f {
	case Hermes:
		return "hermes"
	case Llama3JSON:
		return "llama3_json"
	}
	return "none"
}

// ParseFormat reads a format name: hermes, llama3_json or none.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "hermes":
		return Hermes, nil
	case "llama3_json":
		return Llama3JSON, nil
	case "none":
		return None, nil
	}
	return None, fmt.Errorf("tool-call format %q: expected hermes, llama3_json or none", s)
}

// Detect picks the format a model was trained on from its chat template and whether its
// vocabulary has Llama 3's <|python_tag|> token: a template that writes <tool_call> is Hermes'
// (Qwen2.5, Qwen3); a template that takes tools in a vocabulary with <|python_tag|> is Llama 3's.
// Anything else is None: the template does not tell the model about tools.
func Detect(template string, hasPythonTag bool) Format {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return Hermes
	case hasPythonTag && strings.Contains(template, "tools"):
		return Llama3JSON
	}
	return None
}

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
	pythonTag   = "<|python_tag|>"
)
