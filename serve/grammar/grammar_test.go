package grammar

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRecognizer feeds hand-written texts byte by byte: which are viable prefixes, and which are
// complete values of the schema.
func TestRecognizer(t *testing.T) {
	_, v := qwenVocab(t)
	cases := []struct {
		schema string
		ok     []string // complete
		prefix []string // viable but incomplete
		bad    []string // refused somewhere
	}{
		{`{"type":"object"}`, []string{`{}`, `{"a":1}`, `{ "a" : [1, 2.5e3, -0, true, null, "x\u00e9\n"] , "b":{}}`},
			[]string{`{"a":`, `{"a":"\ud83d`, `{"a":"\ud83d\ude00`}, []string{`[]`, `{"a"}`, `{"a":01}`, `{,}`, `{"a":1,}`, `{"a":"\ud83d"`, `{"a":"\ude00"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":"\q"}`, ` {}`, `{}x`}},
		{`{"type":"object","properties":{"name":{"type":"string","maxLength":3},"age":{"type":"integer"}},"required":["name"],"additionalProperties":false}`,
			[]string{`{"name":"abc"}`, `{"age":-12,"name":""}`, `{"name":"日本語"}`},
			[]string{`{"na`, `{"age":1`},
			[]string{`{"name":"abcd"}`, `{"age":1}`, `{"name":"a","name":"b"}`, `{"nick":"x"}`, `{"name":"a","age":1.5}`, `{"name":"a","age":1e3}`, `{"n\u0061me":"a"}`}},
		{`{"type":"object","properties":{"a":{"type":"boolean"}}}`, // undeclared keys allowed: any value
			[]string{`{"a":true,"b":[1,{"c":null}]}`, `{"ab":1,"a":false}`, `{"bé":1}`},
			nil,
			// Undeclared keys are written without escapes, so "\u0061" cannot sneak in as "a".
			[]string{`{"a":1}`, `{"\u0061":1}`, `{"b\u00e9":1}`, `{"a":true,"a":false}`}},
		{`{"type":"array","items":{"enum":["red","green",3,null]},"minItems":1,"maxItems":2}`,
			[]string{`["red"]`, `[3, null]`}, []string{`[`, `["gr`},
			[]string{`[]`, `["red","red","red"]`, `["blue"]`, `[4]`, `[30]`}},
		{`{"anyOf":[{"type":"string","maxLength":2},{"type":"object","properties":{"k":{"const":"x"}},"required":["k"],"additionalProperties":false}]}`,
			[]string{`"ab"`, `{"k":"x"}`}, []string{`"a`}, []string{`"abc"`, `{"k":"y"}`, `{}`}},
		{`{"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]string{`{"next":null}`, `{"next":{"next":{"next":null}}}`}, nil, []string{`{}`, `{"next":{}}`}},
		{`{"type":["number","null"]}`, []string{`0`, `-1.5`, `3e-7`, `null`, `123456789012345`}, []string{`1.`, `1e`},
			[]string{`1234567890123456`, `1.2.3`, `.5`, `+1`, `1e123`, `"1"`}},
		{`{"type":"string","minLength":2}`, []string{`"ab"`, `"\n\t"`, `"😀😀"`}, nil, []string{`"a"`, `""`, `"😀"`}},
		{`{"const":{"a":[1,"<b>"]}}`, []string{`{"a":[1,"<b>"]}`}, nil, []string{`{"a": [1,"<b>"]}`}},
	}
	for _, c := range cases {
		g := compileSchema(t, c.schema)
		for _, s := range c.ok {
			if p, done := accepts(g, v, s); !p || !done {
				t.Errorf("schema %s: %q: viable %v, complete %v; want a complete value", c.schema, s, p, done)
			}
		}
		for _, s := range c.prefix {
			if p, done := accepts(g, v, s); !p || done {
				t.Errorf("schema %s: %q: viable %v, complete %v; want an incomplete prefix", c.schema, s, p, done)
			}
		}
		for _, s := range c.bad {
			if p, done := accepts(g, v, s); p && done {
				t.Errorf("schema %s: %q accepted as complete", c.schema, s)
			}
			// A bad text must be refused outright, unless it is only incomplete; none of the bad
			// texts above is a prefix of a good one.
			if p, _ := accepts(g, v, s); p {
				t.Errorf("schema %s: %q accepted as a viable prefix", c.schema, s)
			}
		}
	}
}

// TestRandomWalks: random choices among the allowed tokens always end in JSON that validates
// (checked by a validator written from the specification), and the mask is never empty before
// the end.
func TestRandomWalks(t *testing.T) {
	_, v := qwenVocab(t)
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},"ok":{"type":"boolean"}},"required":["name","age"],"additionalProperties":false}`,
		`{"type":"array","items":{"anyOf":[{"type":"number"},{"enum":["a","b",null]}]},"minItems":2,"maxItems":4}`,
		`{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"],"additionalProperties":false}`,
		`{"$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/t"}`,
		`{"type":"string","minLength":3,"maxLength":8}`,
		`{"type":"object","properties":{"a":{"type":"null"}},"additionalProperties":{"type":"integer"}}`,
		`{"type":"object","maxProperties_is_not_here":null}`,
	}
	schemas = schemas[:len(schemas)-1]
	ended := 0
	for i, s := range schemas {
		g := compileSchema(t, s)
		for seed := range 6 {
			r := rand.New(rand.NewPCG(uint64(i), uint64(seed)))
			if _, done := randomWalk(t, g, v, s, r, 400); done {
				ended++
			}
		}
	}
	if ended < len(schemas)*6*3/4 {
		t.Errorf("only %d of %d random walks ended within 400 tokens", ended, len(schemas)*6)
	}
}

func TestSchemaErrors(t *testing.T) {
	cases := []struct{ schema, keyword string }{
		{`{"type":"string","pattern":"a+"}`, "pattern"},
		{`{"type":"number","minimum":1}`, "minimum"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"date"}}}`, "format"},
		{`{"oneOf":[{"type":"string"}]}`, "oneOf"},
		{`{"type":"wat"}`, "type"},
		{`{"type":"array","items":[{"type":"string"}]}`, "items"},
		{`{"$ref":"http://example.com/s.json"}`, "$ref"},
		{`{"$ref":"#/nowhere"}`, "$ref"},
		{`{"type":"string","maxLength":-1}`, "maxLength"},
		{`{"type":"string","maxLength":1.5}`, "maxLength"},
		{`{"allOf":[{"type":"string"},{"maxLength":2}]}`, "allOf"},
		{`{"enum":[1],"maxLength":3}`, "maxLength"},
		{`{"anyOf":[]}`, "anyOf"},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, "$ref"},
	}
	for _, c := range cases {
		b := NewBuilder()
		_, err := b.Schema([]byte(c.schema))
		var se *SchemaError
		if !errors.As(err, &se) || se.Keyword != c.keyword || !strings.Contains(err.Error(), c.keyword) {
			t.Errorf("schema %s: error %v; want one naming %q", c.schema, err, c.keyword)
		}
	}
	for _, s := range []string{`{"enum":[]}`, `{"type":"array","minItems":3,"maxItems":2}`, `false`,
		`{"type":"object","required":["x"],"additionalProperties":false}`,
		`{"$defs":{"a":{"type":"object","properties":{"b":{"$ref":"#/$defs/a"}},"required":["b"]}},"$ref":"#/$defs/a"}`,
		`{"type":"integer","enum":["a"]}`} {
		b := NewBuilder()
		r, err := b.Schema([]byte(s))
		if err == nil {
			_, err = b.Build(r)
		}
		if !errors.Is(err, ErrUnsatisfiable) {
			t.Errorf("schema %s: %v; want ErrUnsatisfiable", s, err)
		}
	}
	b := NewBuilder()
	r, err := b.Schema([]byte(`{"anyOf":[{"$ref":"#"},{"type":"null"}]}`))
	if err == nil {
		_, err = b.Build(r)
	}
	if err == nil || !strings.Contains(err.Error(), "itself") {
		t.Errorf("a schema that begins with itself: %v", err)
	}
}
