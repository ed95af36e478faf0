package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// samplingParams are the request fields shared by chat and text completions. Pointers tell an
// absent (or null) field from a zero one: absent fields take the bundle's defaults.
type samplingParams struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	Stop                stopList           `json:"stop"`
	Seed                *int64             `json:"seed"`
	N                   *int               `json:"n"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	LogitBias           map[string]float64 `json:"logit_bias"`

	// Extensions with vLLM's names, for what the runtime's sampler offers beyond OpenAI.
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	// IgnoreEOS keeps generating past end-of-sequence tokens (benchmarks of fixed length).
	IgnoreEOS bool `json:"ignore_eos"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	samplingParams
	Messages    []chatMessage `json:"messages"`
	Logprobs    *bool         `json:"logprobs"`
	TopLogprobs *int          `json:"top_logprobs"`
	// Tools and ToolChoice are checked by parseTools; Tools stays raw so that each tool reaches
	// the chat template with its keys in the client's order.
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`
	ResponseFormat    *responseFormat `json:"response_format"`
}

// responseFormat is OpenAI's response_format: text, json_object, or json_schema with a schema.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// chatMessage is one message of a conversation. Content is a string or an array of content
// parts of which only "text" parts are understood. An assistant message may carry the tool calls
// it made, and a tool message answers one of them.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       *string         `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	samplingParams
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
}

// stopList is OpenAI's stop field: a string, an array of strings, or null.
type stopList []string

// errStopType is stopList's complaint about any other JSON value.
var errStopType = errors.New(`field "stop": expected a string or an array of strings`)

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *stopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errStopType
	}
	*s = many
	return nil
}

// decodeBody decodes a JSON request body into v. Bad JSON names the position, and a field of
// the wrong type names the field (OpenAI's param).
func decodeBody(data []byte, v any) *apiError {
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("", "invalid_json", "the request body is empty; expected a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return badRequest("", "invalid_json", "the request body is not valid JSON: %v (at byte %d)", syn, syn.Offset)
		case errors.As(err, &typ):
			// The shared fields sit in an embedded struct, whose Go name is not the client's.
			typ.Field = strings.TrimPrefix(typ.Field, "samplingParams.")
			if typ.Field == "" {
				return badRequest("", "invalid_json", "the request body must be a JSON object, not %s", typ.Value)
			}
			return badRequest(typ.Field, "invalid_type", "field %q: expected %s, got %s", typ.Field, jsonKind(typ.Type.String()), typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("", "invalid_json", "the request body is truncated JSON")
		case errors.Is(err, errStopType):
			return badRequest("stop", "invalid_type", "%v", errStopType)
		default:
			return badRequest("", "invalid_json", "the request body could not be decoded: %v", err)
		}
	}
	if dec.More() {
		return badRequest("", "invalid_json", "the request body has data after its JSON object")
	}
	return nil
}

// jsonKind names a Go type the way a JSON user thinks of it.
func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "*"):
		return jsonKind(goType[1:])
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "[]"), strings.HasPrefix(goType, "serve.stopList"):
		return "an array"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "struct"), strings.HasPrefix(goType, "serve."):
		return "an object"
	}
	return fmt.Sprintf("a value of type %s", goType)
}
