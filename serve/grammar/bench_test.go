package grammar

import (
	"fmt"
	"strings"
	"testing"
)

// benchMask measures one Mask call on the Qwen vocabulary (151,936 ids) in the state reached
// after prefix.
func benchMask(b *testing.B, schema, prefix string) {
	_, v := qwenVocab(b)
	g := compileSchema(b, schema)
	mt := NewMatcher(g, v, []int{151645})
	if !mt.AcceptBytes([]byte(prefix)) {
		b.Fatalf("prefix %q refused", prefix)
	}
	mask := NewMask(v.Size())
	b.ResetTimer()
	for range b.N {
		mt.Mask(mask)
	}
}

const benchSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"],"additionalProperties":false}`

// The states a JSON answer spends its tokens in: inside a string (most tokens), before a key,
// inside a number, and in free JSON (json_object) before a value.
func BenchmarkMaskInString(b *testing.B) { benchMask(b, benchSchema, `{"name": "Ada Lo`) }
func BenchmarkMaskBoundedString(b *testing.B) {
	benchMask(b, benchSchema, `{"name": "Ada Lovelace was a mathematic`)
}
func BenchmarkMaskKey(b *testing.B)       { benchMask(b, benchSchema, `{"name": "Ada", `) }
func BenchmarkMaskNumber(b *testing.B)    { benchMask(b, benchSchema, `{"name": "Ada", "age": 3`) }
func BenchmarkMaskFreeValue(b *testing.B) { benchMask(b, `{"type":"object"}`, `{"a": [1, `) }
func BenchmarkMaskFreeKey(b *testing.B)   { benchMask(b, `{"type":"object"}`, `{"a": 1, "`) }

func BenchmarkNewVocab(b *testing.B) {
	tok, _ := qwenVocab(b)
	for range b.N {
		NewVocab(tok, qwenModelVocab)
	}
}

// BenchmarkMaskHostileAnyOf: a schema built to keep the most alternatives alive at once inside
// a string (an anyOf of 40 strings of different lengths): the bound on what one request's
// grammar can cost per token.
func BenchmarkMaskHostileAnyOf(b *testing.B) {
	var alts []string
	for i := range 40 {
		alts = append(alts, fmt.Sprintf(`{"type":"string","maxLength":%d}`, 100+i))
	}
	benchMask(b, `{"anyOf":[`+strings.Join(alts, ",")+`]}`, `"abc`)
}
