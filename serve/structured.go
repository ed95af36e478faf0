package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anepack/anepack/serve/grammar"
	"github.com/anepack/anepack/serve/toolcall"
	"github.com/anepack/anepack/tokenizer"
)

// DefaultGrammarCache is how many compiled response formats and tool grammars a server keeps.
const DefaultGrammarCache = 64

// responseGrammar compiles response_format into a grammar (nil for text). Schemas are cached by
// their compact JSON text.
func (s *Server) responseGrammar(rf *responseFormat) (*grammar.Grammar, *apiError) {
	if rf == nil {
		return nil, nil
	}
	switch rf.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return s.schemaGrammar("json_object", []byte(`{"type":"object"}`), "response_format")
	case "json_schema":
	default:
		return nil, badRequest("response_format.type", "invalid_value", "response_format.type %q: expected text, json_object or json_schema", rf.Type)
	}
	js := rf.JSONSchema
	switch {
	case js == nil:
		return nil, badRequest("response_format.json_schema", "missing_required_parameter", "response_format of type json_schema needs json_schema: {\"name\": ..., \"schema\": {...}}")
	case !toolName.MatchString(js.Name):
		return nil, badRequest("response_format.json_schema.name", "invalid_value", "response_format.json_schema.name %q: expected 1 to 64 letters, digits, underscores or dashes", js.Name)
	case len(bytes.TrimSpace(js.Schema)) == 0 || bytes.Equal(bytes.TrimSpace(js.Schema), []byte("null")):
		return nil, badRequest("response_format.json_schema.schema", "missing_required_parameter", "response_format.json_schema has no schema")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, js.Schema); err != nil {
		return nil, badRequest("response_format.json_schema.schema", "invalid_value", "response_format.json_schema.schema is not valid JSON: %v", err)
	}
	return s.schemaGrammar("json_schema:"+compact.String(), compact.Bytes(), "response_format")
}

func (s *Server) schemaGrammar(key string, schema []byte, param string) (*grammar.Grammar, *apiError) {
	g, err := s.grammars.Get(key, func() (*grammar.Grammar, error) {
		b := grammar.NewBuilder()
		r, err := b.Schema(schema)
		if err != nil {
			return nil, err
		}
		return b.Build(r)
	})
	if err != nil {
		return nil, schemaError(param, "the response_format schema", err)
	}
	s.grammarVocab() // build the vocabulary's tries now, before the slot is taken
	return g, nil
}

// toolGrammar compiles the grammar that forces tool calls, cached by the tools' names and
// parameter schemas, the choice and the format.
func (s *Server) toolGrammar(t *toolSetup) (*grammar.Grammar, *apiError) {
	var key strings.Builder
	fmt.Fprintf(&key, "tools:%v:%s:%s:%v", s.toolFormat, t.choice, strconv.Quote(t.name), t.parallel)
	for _, tool := range t.tools {
		var compact bytes.Buffer
		if json.Compact(&compact, tool.Parameters) != nil {
			compact.Reset()
		}
		fmt.Fprintf(&key, "\x00%s\x00%s", tool.Name, compact.String())
	}
	g, err := s.grammars.Get(key.String(), func() (*grammar.Grammar, error) {
		return toolcall.Constrain(s.toolFormat, t.tools, t.name, t.parallel)
	})
	if err != nil {
		var te *toolcall.ToolError
		if errors.As(err, &te) {
			return nil, schemaError(fmt.Sprintf("tools[%d].function.parameters", te.Index), fmt.Sprintf("tools[%d].function.parameters", te.Index), te.Err)
		}
		return nil, schemaError("tools", "", err) // Constrain's errors say what they are about
	}
	s.grammarVocab()
	return g, nil
}

// schemaError is the 400 for a schema the grammar compiler refuses: the keyword it does not
// support, or a schema nothing can satisfy. what names the schema ("" when err does).
func schemaError(param, what string, err error) *apiError {
	var se *grammar.SchemaError
	if errors.As(err, &se) && se.Keyword != "" {
		if what == "" {
			what = "the schema"
		}
		return badRequest(param, "unsupported_value", "%s cannot be used for constrained decoding: %v (keyword %q)", what, err, se.Keyword)
	}
	if what == "" {
		return badRequest(param, "invalid_value", "%v", err)
	}
	return badRequest(param, "invalid_value", "%s: %v", what, err)
}

// grammarVocab returns the vocabulary prepared for constrained decoding, built on first use
// (about a quarter of a second for 150k tokens).
func (s *Server) grammarVocab() *grammar.Vocab {
	s.vocabOnce.Do(func() { s.vocab = grammar.NewVocab(s.tok, s.model.Config.VocabSize) })
	return s.vocab
}

// eosIDs returns the ids that end a generation of pl.
func (s *Server) eosIDs(pl *plan) []int {
	if pl.opts.EOS != nil {
		return pl.opts.EOS
	}
	return s.model.EOSIDs()
}

// probeTool is the tool detectToolFormat renders the chat template with.
const probeTool = "anepack_probe_tool"

// detectToolFormat finds the model's tool-call format by rendering its chat template with one
// tool (see toolcall.Detect).
func detectToolFormat(tok *tokenizer.Tokenizer) toolcall.Format {
	if !tok.HasChatTemplate() {
		return toolcall.None
	}
	tool := tokenizer.NewObject("type", "function", "function", tokenizer.NewObject("name", probeTool,
		"description", "probe", "parameters", tokenizer.NewObject("type", "object", "properties", tokenizer.NewObject())))
	text, err := tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "hi"}},
		tokenizer.ChatOptions{Tools: []*tokenizer.Object{tool}, AddGenerationPrompt: true})
	if err != nil {
		return toolcall.None
	}
	_, python := tok.TokenID("<|python_tag|>")
	return toolcall.Detect(text, probeTool, python)
}
