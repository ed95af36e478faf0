package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// dagSchema is an anyOf DAG of n levels ($defs/dK is anyOf [dK+1, dK+1], 2^n paths to one
// integer leaf), each definition compiled before the one that refers to it, so the nesting
// limit never applies. 2 KB at n = 21. The DAG is the value of the object's property "n" when
// object is set.
func dagSchema(n int, object bool) string {
	var defs, refs []string
	for k := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, k, k+1, k+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, n))
	for k := n; k >= 0; k-- {
		refs = append(refs, fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, k))
	}
	root := `"anyOf":[` + strings.Join(refs, ",") + `]`
	if object {
		root = `"type":"object","properties":{"n":{` + root + `}},"required":["n"],"additionalProperties":false`
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},` + root + `}`
}

// TestSchemaDAG sends a schema DAG of 40 levels as a response format and, wrapped in an object,
// as a forced tool's parameters. The recognizer used to follow every one of its 2^40 paths for
// each byte a token could start with, on the engine's goroutine: at 21 levels every stream of the
// server stalled for 45 s, at 24 the process ran out of memory. Both are answered now, with
// output that follows the schema, and an ordinary request after them too.
func TestSchemaDAG(t *testing.T) {
	ts := startServer(t, Config{Context: 2048}) // the tool's schema is in the prompt
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": "x"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "dag", "schema": json.RawMessage(dagSchema(40, false))}}}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", body, &got)
	if text := deref(got.Choices[0].Message.Content); strings.Trim(text, "-0123456789") != "" {
		t.Fatalf("response_format: %q is not an integer (or its prefix)", text)
	}

	body = map[string]any{"model": ts.ModelID(), "max_tokens": 40, "messages": []map[string]any{{"role": "user", "content": "x"}},
		"tool_choice": "required", "tools": []map[string]any{{"type": "function",
			"function": map[string]any{"name": "f", "parameters": json.RawMessage(dagSchema(40, true))}}}}
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forced tool with DAG parameters: %d %s", resp.StatusCode, data)
	}
	ts.post(t, "/v1/completions", map[string]any{"model": ts.ModelID(), "prompt": "still here", "max_tokens": 2}, &got)
}
