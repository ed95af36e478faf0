package grammar

import (
	"math/rand/v2"
	"regexp"
	"sync"
	"testing"

	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/serve/internal/schemacheck"
	"github.com/anepack/anepack/tokenizer"
)

// The real Qwen2.5/Qwen3 tokenizer (151,665 ids) for a model vocabulary of 151,936, as the
// serve tests' bundle has; loaded once per test binary.
var qwen struct {
	once  sync.Once
	tok   *tokenizer.Tokenizer
	vocab *Vocab
	err   error
}

const qwenModelVocab = 151936

func qwenVocab(t testing.TB) (*tokenizer.Tokenizer, *Vocab) {
	t.Helper()
	qwen.once.Do(func() {
		tj, err := qwentok.TokenizerJSON()
		if err != nil {
			qwen.err = err
			return
		}
		if qwen.tok, qwen.err = tokenizer.LoadJSON(tj, qwentok.TokenizerConfigJSON()); qwen.err == nil {
			qwen.vocab = NewVocab(qwen.tok, qwenModelVocab)
		}
	})
	if qwen.err != nil {
		t.Fatal(qwen.err)
	}
	return qwen.tok, qwen.vocab
}

// compileSchema builds a grammar of one schema.
func compileSchema(t testing.TB, schema string) *Grammar {
	t.Helper()
	b := NewBuilder()
	r, err := b.Schema([]byte(schema))
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	g, err := b.Build(r)
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	return g
}

// accepts feeds text to a fresh matcher: whether every byte was allowed, and whether the text
// may end there.
func accepts(g *Grammar, v *Vocab, text string) (prefix, complete bool) {
	mt := NewMatcher(g, v, nil)
	if !mt.AcceptBytes([]byte(text)) {
		return false, false
	}
	return true, mt.CanEnd()
}

// validate checks v against schema with the independent validator of package schemacheck.
func validate(doc, schema, v any) error { return schemacheck.Value(doc, schema, v) }

// decodeJSON decodes one JSON document with numbers kept as text; it fails on trailing data.
func decodeJSON(text []byte) (any, error) { return schemacheck.Decode(text) }

// structural matches tokens that help a random walk finish: closing quotes and brackets.
var structural = regexp.MustCompile(`["}\],]`)

var structuralMask struct {
	once sync.Once
	m    Mask
}

// closers returns the tokens of v that structural matches (computed once).
func closers(v *Vocab) Mask {
	structuralMask.once.Do(func() {
		structuralMask.m = NewMask(v.Size())
		for id, b := range v.bytes {
			if b != nil && structural.Match(b) {
				structuralMask.m.set(id)
			}
		}
	})
	return structuralMask.m
}

// randomWalk generates with a Matcher and a random "model": half of the steps pick uniformly
// among the allowed tokens, the other half among the allowed ones that close something (or an
// end-of-sequence id). It fails the test when the mask is ever empty before the end, when a
// masked token is refused by Accept, or when the finished text does not validate. It returns
// the text and whether it ended within maxSteps.
func randomWalk(t *testing.T, g *Grammar, v *Vocab, schema string, r *rand.Rand, maxSteps int) (string, bool) {
	t.Helper()
	const eos = 151645
	mt := NewMatcher(g, v, []int{eos})
	mask := NewMask(v.Size())
	var out []byte
	var allowed, closing []int
	cl := closers(v)
	for step := 0; step < maxSteps; step++ {
		mt.Mask(mask)
		allowed, closing = allowed[:0], closing[:0]
		for w, word := range mask {
			for word != 0 {
				id := w*64 + bitsTrailing(word)
				word &= word - 1
				allowed = append(allowed, id)
				if id == eos || cl.Has(id) {
					closing = append(closing, id)
				}
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("schema %s: empty mask after %q", schema, out)
		}
		pick := allowed
		if len(closing) > 0 && r.IntN(2) == 0 {
			pick = closing
		}
		id := pick[r.IntN(len(pick))]
		if !mt.Accept(id) {
			t.Fatalf("schema %s: Accept refused token %d (%q) the mask allowed, after %q", schema, id, v.bytes[id], out)
		}
		if id == eos {
			doc, err := decodeJSON(out)
			if err != nil {
				t.Fatalf("schema %s: ended with %q, not JSON: %v", schema, out, err)
			}
			var sdoc any
			if sd, err := decodeJSON([]byte(schema)); err == nil {
				sdoc = sd
			}
			if err := validate(sdoc, sdoc, doc); err != nil {
				t.Fatalf("schema %s: %q does not validate: %v", schema, out, err)
			}
			return string(out), true
		}
		out = append(out, v.bytes[id]...)
	}
	return string(out), false
}

func bitsTrailing(w uint64) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}
