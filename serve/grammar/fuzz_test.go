package grammar

import (
	"math/rand/v2"
	"testing"
)

// smallVocab is a vocabulary of a few hundred tokens for tests that must be quick: every byte
// from tab up (printable ASCII, DEL, and every byte a UTF-8 character is made of, as in the
// byte-level vocabularies of real models, so any literal a schema names can be spelled), JSON
// punctuation pairs, words, and UTF-8 pieces that split a character.
type smallVocab [][]byte

func (s smallVocab) VocabSize() int           { return len(s) + 1 }
func (s smallVocab) TokenBytes(id int) []byte { return s[id] }
func (s smallVocab) IsSpecial(id int) bool    { return id == len(s) }

func newSmallVocab() smallVocab {
	var s smallVocab
	for c := 0x09; c <= 0xff; c++ {
		s = append(s, []byte{byte(c)})
	}
	for _, w := range []string{`{"`, `":`, `",`, `"}`, `": "`, `", "`, `[]`, `{}`, `],`, `},`, `true`, `false`, `null`, `12`, `-0.5`, `e+3`,
		`name`, `age`, `\n`, `\u00e9`, `\ud83d`, `\ude00`, "é", "日本", "\xe6", "\x97\xa5", "\xf0\x9f", "\x98\x80", "  ", "\n  ", `<tool_call>`, "\n"} {
		s = append(s, []byte(w))
	}
	s = append(s, nil) // the eos id's slot: special
	return s[:len(s)-1]
}

// FuzzSchema compiles arbitrary schemas: no panic, a clear error or a grammar; with a grammar,
// random walks over a small vocabulary never meet an empty mask before the end, and what they
// finish validates.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["a"],"additionalProperties":false}`,
		`{"$defs":{"t":{"type":"array","items":{"$ref":"#/$defs/t"},"maxItems":2}},"$ref":"#/$defs/t"}`,
		`{"enum":["a",1,null,{"x":[true]}]}`,
		`{"type":["string","number"],"minLength":1}`,
		`{"anyOf":[{"$ref":"#"},{"type":"null"}]}`,
		`{"type":"object","required":["k"]}`,
		`true`, `{"type":"array","minItems":2,"items":{"const":"x"}}`,
		"{\"enum\":[\"\xff000\"]}", // invalid UTF-8 decodes as U+FFFD, whose bytes no word holds
		dagSchema(24),              // 2^24 paths through anyOf and $ref to one node
		wideConsts(2000),           // one anyOf of many consts: a merged literal
		stringsAndConst(15),        // heads inside strings beside one that is not
	} {
		f.Add(s, uint64(1))
	}
	voc := newSmallVocab()
	v := NewVocab(voc, voc.VocabSize())
	eos := len(voc)
	f.Fuzz(func(t *testing.T, schema string, seed uint64) {
		b := NewBuilder()
		r, err := b.Schema([]byte(schema))
		if err != nil {
			return
		}
		g, err := b.Build(r)
		if err != nil {
			return
		}
		doc, err := decodeJSON([]byte(schema))
		if err != nil {
			t.Fatalf("compiled a schema that is not JSON: %q", schema)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		mt := NewMatcher(g, v, []int{eos})
		mask := NewMask(v.Size())
		var out []byte
		for range 200 {
			mt.Mask(mask)
			var allowed []int
			for id := range v.Size() {
				if mask.Has(id) {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("schema %s: empty mask after %q", schema, out)
			}
			id := allowed[rng.IntN(len(allowed))]
			if mask.Has(eos) && rng.IntN(2) == 0 {
				id = eos
			}
			if !mt.Accept(id) {
				t.Fatalf("schema %s: masked token %q refused after %q", schema, v.TokenBytes(id), out)
			}
			if id == eos {
				val, err := decodeJSON(out)
				if err != nil {
					t.Fatalf("schema %s: finished %q is not JSON: %v", schema, out, err)
				}
				if err := validate(doc, doc, val); err != nil {
					t.Fatalf("schema %s: %q does not validate: %v", schema, out, err)
				}
				return
			}
			out = append(out, v.TokenBytes(id)...)
		}
	})
}
