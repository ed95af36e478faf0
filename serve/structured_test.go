package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anepack/anepack/serve/grammar"
	"github.com/anepack/anepack/serve/internal/schemacheck"
)

// structuredSchemas are the schemas the structured-output tests ask for: nested objects,
// arrays, enums, anyOf, bounded strings, numbers and a recursive $ref.
var structuredSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer"},"pets":{"type":"array","items":{"enum":["cat","dog",null]},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"object","properties":{"point":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"additionalProperties":false},"label":{"anyOf":[{"type":"string","maxLength":4},{"type":"boolean"}]}},"required":["point","label"],"additionalProperties":false}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
	`{"type":"array","items":{"type":"string","minLength":1,"maxLength":3},"minItems":2,"maxItems":4}`,
}

// structuredChat asks for a chat completion under a response_format and returns its content
// and finish_reason.
func structuredChat(t *testing.T, ts *testServer, rf map[string]any, temp float64, seed, maxTokens int) (string, string) {
	t.Helper()
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", map[string]any{"model": ts.ModelID(), "max_tokens": maxTokens, "temperature": temp, "seed": seed,
		"messages": []map[string]any{{"role": "user", "content": "Describe a person as JSON."}}, "response_format": rf}, &got)
	if len(got.Choices) != 1 || got.Choices[0].Message.Content == nil {
		t.Fatalf("response: %+v", got)
	}
	return *got.Choices[0].Message.Content, got.Choices[0].FinishReason
}

// TestStructuredOutput: whatever the (synthetic, gibberish-speaking) model prefers, across
// seeds and temperatures, a json_schema answer that finishes parses and validates (checked by
// an independent validator), and one cut by max_tokens is a prefix of a valid answer.
func TestStructuredOutput(t *testing.T) {
	ts := startServer(t, Config{})
	v := ts.grammarVocab()
	stops, runs := 0, 0
	for si, schema := range structuredSchemas {
		rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": fmt.Sprintf("s%d", si), "schema": json.RawMessage(schema), "strict": true}}
		b := grammar.NewBuilder()
		r, err := b.Schema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		g, err := b.Build(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			temp float64
			seed int
		}{{0, 1}, {0.7, 2}, {1, 3}, {1.5, 4}} {
			content, finish := structuredChat(t, ts, rf, c.temp, c.seed, 150)
			runs++
			switch finish {
			case "stop":
				stops++
				if err := schemacheck.Validate([]byte(schema), []byte(content)); err != nil {
					t.Errorf("schema %d, temperature %v: %q does not validate: %v", si, c.temp, content, err)
				}
			case "length":
				if !grammar.NewMatcher(g, v, nil).AcceptBytes([]byte(content)) {
					t.Errorf("schema %d, temperature %v: %q (cut by max_tokens) is not a prefix of a valid answer", si, c.temp, content)
				}
			default:
				t.Errorf("finish_reason %q", finish)
			}
		}
	}
	if stops < runs*2/3 {
		t.Errorf("only %d of %d structured answers finished within 150 tokens", stops, runs)
	}
	t.Logf("%d of %d answers finished", stops, runs)
}

// TestJSONObjectChoicesAndStream: json_object with n=3, streamed and not. Every finished choice
// is a JSON object; the stream, reassembled by choice index, says exactly what the plain answer
// says (choice i samples with seed+i either way); usage counts the prompt once and every
// choice's tokens.
func TestJSONObjectChoicesAndStream(t *testing.T) {
	ts := startServer(t, Config{})
	body := map[string]any{"model": ts.ModelID(), "max_tokens": 64, "temperature": 1, "seed": 11, "n": 3,
		"messages": []map[string]any{{"role": "user", "content": "JSON please."}}, "response_format": map[string]any{"type": "json_object"}}
	var got chatCompletion
	ts.post(t, "/v1/chat/completions", body, &got)
	if len(got.Choices) != 3 {
		t.Fatalf("%d choices; want 3", len(got.Choices))
	}
	texts := map[int]string{}
	for i, c := range got.Choices {
		if c.Index != i || c.Message.Content == nil {
			t.Fatalf("choice %d: %+v", i, c)
		}
		texts[i] = *c.Message.Content
		if c.FinishReason == "stop" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(texts[i]), &obj); err != nil {
				t.Errorf("choice %d: %q is not a JSON object: %v", i, texts[i], err)
			}
		}
	}
	if texts[0] == texts[1] && texts[1] == texts[2] {
		t.Errorf("three choices sampled at temperature 1 are the same: %q", texts[0])
	}
	u := got.Usage
	if u.CompletionTokens < 3 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}

	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	events := ts.stream(t, "/v1/chat/completions", body)
	streamed := map[int]*strings.Builder{}
	finishes := map[int]string{}
	var su *usage
	for _, ev := range events[:len(events)-1] {
		var c chatChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatal(err)
		}
		if c.Usage.Usage != nil {
			su = c.Usage.Usage
		}
		for _, ch := range c.Choices {
			if streamed[ch.Index] == nil {
				streamed[ch.Index] = new(strings.Builder)
				if ch.Delta.Role != "assistant" {
					t.Fatalf("the first chunk of choice %d has no role: %s", ch.Index, ev)
				}
			}
			if ch.Delta.Content != nil {
				streamed[ch.Index].WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finishes[ch.Index] = *ch.FinishReason
			}
		}
	}
	for i := range 3 {
		if streamed[i] == nil || streamed[i].String() != texts[i] || finishes[i] != got.Choices[i].FinishReason {
			t.Errorf("choice %d streamed %q (%s); the plain answer says %q (%s)", i, streamed[i], finishes[i], texts[i], got.Choices[i].FinishReason)
		}
	}
	if su == nil || *su != u && (su.CompletionTokens != u.CompletionTokens || su.PromptTokens != u.PromptTokens) {
		t.Errorf("streamed usage %+v; plain %+v", su, u)
	}
}

// TestConcurrentStructured: constrained requests at once, on two sessions, sharing grammars
// (the same schema) and not (another), while the vocabulary is prepared on first use; every
// finished answer validates. Run with -race, it checks the shared parts are safe.
func TestConcurrentStructured(t *testing.T) {
	ts := startServer(t, Config{Parallel: 2})
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			schema := structuredSchemas[i%2]
			body, _ := json.Marshal(map[string]any{"model": ts.ModelID(), "max_tokens": 80, "temperature": 1, "seed": i,
				"messages":        []map[string]any{{"role": "user", "content": "JSON"}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "s", "schema": json.RawMessage(schema)}}})
			resp, err := ts.client.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var got chatCompletion
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
				errs <- fmt.Errorf("status %d: %v", resp.StatusCode, err)
				return
			}
			if c := got.Choices[0]; c.FinishReason == "stop" {
				if err := schemacheck.Validate([]byte(schema), []byte(*c.Message.Content)); err != nil {
					errs <- fmt.Errorf("%q: %v", *c.Message.Content, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if size, hits, misses := ts.grammars.Stats(); size != 2 || hits+misses != 6 {
		t.Errorf("grammar cache: %d entries, %d hits, %d misses; want 2 schemas over 6 lookups", size, hits, misses)
	}
}
