package toolcall

import (
	"encoding/json"
	"fmt"

	"github.com/anepack/anepack/serve/grammar"
)

// Tool is a function a model may call.
type Tool struct {
	Name string
	// Parameters is the JSON Schema of the arguments; empty means none (OpenAI: "omitting
	// parameters defines a function with an empty parameter list"), so the arguments are {}.
	Parameters json.RawMessage
}

// ToolError is a tool whose parameter schema cannot be compiled.
type ToolError struct {
	Index int // in the tools given to Constrain
	Err   error
}

// Error names the tool's parameters and the schema error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("tools[%d].function.parameters: %v", e.Index, e.Err)
}

// Unwrap returns the schema error (a *grammar.SchemaError).
func (e *ToolError) Unwrap() error { return e.Err }

// Constrain builds the grammar of an answer made of tool calls only, written in format f, each
// call naming one of tools with arguments that match its parameters. With only set, the answer
// is one call to that function (tool_choice naming a function); otherwise it is one call or,
// with parallel, one or more (tool_choice "required"). This is how vLLM makes those choices hold
// whatever the model would rather say; the calls keep the family's own form, so the model writes
// what it was trained to write and the same Parser reads it.
func Constrain(f Format, tools []Tool, only string, parallel bool) (*grammar.Grammar, error) {
	if f != Hermes && f != Llama3JSON {
		return nil, fmt.Errorf("tool calls cannot be forced without a tool-call format (the model's is %v)", f)
	}
	argsKey := "arguments"
	if f == Llama3JSON {
		argsKey = "parameters"
	}
	b := grammar.NewBuilder()
	var calls []grammar.Ref
	for i, t := range tools {
		if only != "" && t.Name != only {
			continue
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","additionalProperties":false}`)
		}
		args, err := b.Schema(params)
		if err != nil {
			return nil, &ToolError{Index: i, Err: err}
		}
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, err
		}
		calls = append(calls, b.Object([]grammar.Property{
			{Name: "name", Value: b.Literal(string(name)), Required: true},
			{Name: argsKey, Value: args, Required: true},
		}, nil))
	}
	if len(calls) == 0 {
		return nil, fmt.Errorf("no tool named %q", only)
	}
	most := 1
	if parallel && only == "" {
		most = -1
	}
	var root grammar.Ref
	switch f {
	case Hermes:
		item := b.Seq(b.Text(hermesOpen+"\n"), b.AnyOf(calls...), b.Text("\n"+hermesClose))
		root = b.Repeat(item, "\n", 1, most)
	case Llama3JSON:
		root = b.Repeat(b.AnyOf(calls...), "; ", 1, most)
	}
	g, err := b.Build(root)
	if err != nil {
		return nil, fmt.Errorf("the tools' parameter schemas: %w", err)
	}
	return g, nil
}
