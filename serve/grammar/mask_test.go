package grammar

import (
	"testing"
)

// TestMaskIsExact compares Mask, in states of every kind, with trying each token of the
// vocabulary on its own: the trie walk and the plain-token shortcut must allow exactly the
// tokens that keep the text viable (and the end-of-sequence id exactly when it is complete).
func TestMaskIsExact(t *testing.T) {
	_, v := qwenVocab(t)
	const eos = 151645
	cases := []struct{ schema, prefix string }{
		{benchSchema, `{"name": "Ada Lo`},                                   // a bounded string
		{benchSchema, `{"name": "` + "\xe6\x97"},                            // inside a UTF-8 character
		{benchSchema, `{"name": "a\`},                                       // inside an escape
		{benchSchema, `{"name": "a\u00`},                                    // inside \u
		{benchSchema, `{"name": "Ada", `},                                   // before a key
		{benchSchema, `{"name": "Ada", "a`},                                 // inside a declared key
		{benchSchema, `{"name": "Ada", "age": 3`},                           // a number that may end
		{benchSchema, `{"name": "Ada", "age": 3}`},                          // complete
		{`{"type":"object"}`, `{"a": [1, `},                                 // free JSON
		{`{"type":"object"}`, `{"a": 1, "`},                                 // a free key
		{`{"type":"object","properties":{"ab":{"type":"integer"}}}`, `{"a`}, // declared or not
		{`{"type":"string","maxLength":3}`, `"ab`},
		{`{"enum":["red","green",12,1]}`, `1`},
		{`{"anyOf":[{"type":"string","maxLength":1},{"type":"string","maxLength":40}]}`, `"`},
	}
	mask := NewMask(v.Size())
	for _, c := range cases {
		g := compileSchema(t, c.schema)
		mt := NewMatcher(g, v, []int{eos})
		if !mt.AcceptBytes([]byte(c.prefix)) {
			t.Fatalf("%s: prefix %q refused", c.schema, c.prefix)
		}
		mt.Mask(mask)
		allowed := 0
		for id := range v.Size() {
			want := false
			switch {
			case id == eos:
				want = mt.CanEnd()
			case v.bytes[id] != nil:
				want = mt.try(v.bytes[id])
			}
			if mask.Has(id) != want {
				t.Errorf("%s after %q: token %d %q: mask %v, trying it %v", c.schema, c.prefix, id, v.bytes[id], mask.Has(id), want)
			}
			if want {
				allowed++
			}
		}
		if allowed == 0 {
			t.Errorf("%s after %q: nothing allowed", c.schema, c.prefix)
		}
	}
}
