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

// Detect picks the format a model was trained on from its chat template rendered with one probe
// tool named probe (rendered) and whether its vocabulary has Llama 3's <|python_tag|> token: a
// template that tells the model to answer in <tool_call> blocks is Hermes' (Qwen2.5, Qwen3); one
// that shows the tool in a vocabulary with <|python_tag|> is Llama 3's. Anything else is None:
// the template does not tell the model about tools in a form the server can read back.
func Detect(rendered, probe string, hasPythonTag bool) Format {
	switch {
	case strings.Contains(rendered, hermesOpen):
		return Hermes
	case hasPythonTag && strings.Contains(rendered, probe):
		return Llama3JSON
	}
	return None
}

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
	pythonTag   = "<|python_tag|>"
)
