package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/anepack/anepack/serve/toolcall"
	"github.com/anepack/anepack/tokenizer"
)

// maxTools bounds the tools of one request (OpenAI's limit).
const maxTools = 128

// toolName is OpenAI's rule for function names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Tool choices.
const (
	choiceNone     = "none"
	choiceAuto     = "auto"
	choiceRequired = "required"
	choiceFunction = "function" // one named function
)

// toolSetup is a chat request's tools, checked.
type toolSetup struct {
	objs     []*tokenizer.Object // each tool as the client wrote it, for the chat template
	tools    []toolcall.Tool
	choice   string
	name     string // the function tool_choice names
	parallel bool
}

// parses reports whether the answer is read for tool calls.
func (t *toolSetup) parses() bool { return t != nil && t.choice != choiceNone }

// forced reports whether the answer must be tool calls (constrained decoding).
func (t *toolSetup) forced() bool {
	return t != nil && (t.choice == choiceRequired || t.choice == choiceFunction)
}

// parseTools checks tools, tool_choice and parallel_tool_calls. It returns nil when the request
// has no tools.
func (s *Server) parseTools(req *chatRequest) (*toolSetup, *apiError) {
	if isSet(req.Functions) {
		return nil, badRequest("functions", "unsupported_parameter", "functions (deprecated by OpenAI) is not supported; use tools")
	}
	hasChoice := len(bytes.TrimSpace(req.ToolChoice)) > 0 && !bytes.Equal(bytes.TrimSpace(req.ToolChoice), []byte("null"))
	if !isSet(req.Tools) {
		if t := bytes.TrimSpace(req.Tools); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]")) {
			return nil, badRequest("tools", "invalid_type", "tools: expected an array of tools")
		}
		if hasChoice {
			var c string
			if json.Unmarshal(req.ToolChoice, &c) != nil || c != choiceNone {
				return nil, badRequest("tool_choice", "invalid_value", "tool_choice is only allowed when tools are given")
			}
		}
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(req.Tools, &raws); err != nil {
		return nil, badRequest("tools", "invalid_type", "tools: expected an array of tools")
	}
	if len(raws) > maxTools {
		return nil, badRequest("tools", "invalid_value", "tools has %d entries; at most %d are allowed", len(raws), maxTools)
	}
	ts := &toolSetup{choice: choiceAuto, parallel: true}
	seen := map[string]bool{}
	for i, raw := range raws {
		param := fmt.Sprintf("tools[%d]", i)
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name        *string         `json:"name"`
				Description *string         `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      *bool           `json:"strict"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, badRequest(param, "invalid_type", "%s: expected {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}: %v", param, err)
		}
		switch {
		case t.Type != "function":
			return nil, badRequest(param+".type", "invalid_value", "%s.type is %q; only \"function\" tools are supported", param, t.Type)
		case t.Function == nil:
			return nil, badRequest(param+".function", "missing_required_parameter", "%s has no function", param)
		case t.Function.Name == nil:
			return nil, badRequest(param+".function.name", "missing_required_parameter", "%s.function has no name", param)
		case !toolName.MatchString(*t.Function.Name):
			return nil, badRequest(param+".function.name", "invalid_value", "%s.function.name %q: expected 1 to 64 letters, digits, underscores or dashes", param, *t.Function.Name)
		case seen[*t.Function.Name]:
			return nil, badRequest(param+".function.name", "invalid_value", "%s.function.name %q is given twice", param, *t.Function.Name)
		}
		seen[*t.Function.Name] = true
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) && p[0] != '{' {
			return nil, badRequest(param+".function.parameters", "invalid_type", "%s.function.parameters: expected a JSON Schema object", param)
		}
		obj, err := tokenizer.ParseObject(raw)
		if err != nil {
			return nil, badRequest(param, "invalid_type", "%s: %v", param, err)
		}
		ts.objs = append(ts.objs, obj)
		ts.tools = append(ts.tools, toolcall.Tool{Name: *t.Function.Name, Parameters: t.Function.Parameters})
	}
	if req.ParallelToolCalls != nil {
		ts.parallel = *req.ParallelToolCalls
	}
	if hasChoice {
		var c string
		if json.Unmarshal(req.ToolChoice, &c) == nil {
			switch c {
			case choiceNone, choiceAuto, choiceRequired:
				ts.choice = c
			default:
				return nil, badRequest("tool_choice", "invalid_value", "tool_choice %q: expected none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}", c)
			}
		} else {
			var named struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(req.ToolChoice, &named); err != nil || named.Type != "function" {
				return nil, badRequest("tool_choice", "invalid_value", "tool_choice: expected none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}")
			}
			if !seen[named.Function.Name] {
				return nil, badRequest("tool_choice", "invalid_value", "tool_choice names the function %q, which is not among the tools", named.Function.Name)
			}
			ts.choice, ts.name = choiceFunction, named.Function.Name
		}
	}
	if ts.parses() && s.toolFormat == toolcall.None {
		return nil, badRequest("tools", "unsupported_value",
			"this model's chat template has no tool-call format the server knows (Hermes <tool_call> blocks or Llama 3 JSON), so its tool calls cannot be read; send tool_choice \"none\", or restart anerun serve with --tool-call-parser hermes or llama3_json if the model was trained on one")
	}
	return ts, nil
}

// toolCallsExtra turns an assistant message's tool_calls into what chat templates read: a list
// of {"id", "type", "function": {"name", "arguments"}} with the arguments decoded into an object
// when they are one (templates print them with tojson, as vLLM passes them).
func toolCallsExtra(raw json.RawMessage, param string) ([]any, *apiError) {
	var calls []struct {
		ID       *string `json:"id"`
		Type     string  `json:"type"`
		Function *struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, badRequest(param, "invalid_type", "%s: expected an array of tool calls {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", param)
	}
	out := make([]any, 0, len(calls))
	for j, c := range calls {
		p := fmt.Sprintf("%s[%d]", param, j)
		switch {
		case c.Type != "" && c.Type != "function":
			return nil, badRequest(p+".type", "invalid_value", "%s.type is %q; expected \"function\"", p, c.Type)
		case c.Function == nil || c.Function.Name == nil:
			return nil, badRequest(p+".function.name", "missing_required_parameter", "%s has no function name", p)
		}
		var args any = "{}"
		if c.Function.Arguments != nil {
			args = *c.Function.Arguments
			if obj, err := tokenizer.ParseObject([]byte(*c.Function.Arguments)); err == nil {
				args = obj
			}
		}
		call := tokenizer.NewObject()
		if c.ID != nil {
			call.Set("id", *c.ID)
		}
		call.Set("type", "function")
		call.Set("function", tokenizer.NewObject("name", *c.Function.Name, "arguments", args))
		out = append(out, call)
	}
	return out, nil
}
