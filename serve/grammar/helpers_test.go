package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/anepack/anepack/internal/qwentok"
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

// validate is an independent check of a JSON text against the schema subset, written from the
// JSON Schema specification on the decoded values (not from the recognizer's frames).
func validate(doc any, schema any, v any) error {
	s, ok := schema.(map[string]any)
	if !ok {
		if schema == true {
			return nil
		}
		return fmt.Errorf("schema false")
	}
	if ref, ok := s["$ref"].(string); ok {
		target := doc
		if ref != "#" {
			for _, tok := range splitPointer(ref[2:]) {
				target = target.(map[string]any)[tok]
			}
		}
		return validate(doc, target, v)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := validate(doc, sub, v); err != nil {
				return err
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []error
		for _, sub := range alts {
			err := validate(doc, sub, v)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err)
		}
		if errs != nil {
			return fmt.Errorf("anyOf: %v", errs)
		}
	}
	if t, ok := s["type"]; ok {
		var names []string
		if n, ok := t.(string); ok {
			names = []string{n}
		} else {
			for _, x := range t.([]any) {
				names = append(names, x.(string))
			}
		}
		if !slices.ContainsFunc(names, func(n string) bool { return hasType(v, n) }) {
			return fmt.Errorf("%v is not of type %v", v, names)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
			return fmt.Errorf("%v not in enum %v", v, e)
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, v) {
		return fmt.Errorf("%v is not const %v", v, c)
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if x, ok := s["maxLength"].(json.Number); ok && n > atoi(x) {
			return fmt.Errorf("%q longer than %v", v, x)
		}
		if x, ok := s["minLength"].(json.Number); ok && n < atoi(x) {
			return fmt.Errorf("%q shorter than %v", v, x)
		}
	case []any:
		if x, ok := s["maxItems"].(json.Number); ok && len(v) > atoi(x) {
			return fmt.Errorf("%d items > %v", len(v), x)
		}
		if x, ok := s["minItems"].(json.Number); ok && len(v) < atoi(x) {
			return fmt.Errorf("%d items < %v", len(v), x)
		}
		if it, ok := s["items"]; ok {
			for i, x := range v {
				if err := validate(doc, it, x); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					return fmt.Errorf("missing required %q", r)
				}
			}
		}
		for k, x := range v {
			if ps, ok := props[k]; ok {
				if err := validate(doc, ps, x); err != nil {
					return fmt.Errorf(".%s: %w", k, err)
				}
				continue
			}
			if ap, ok := s["additionalProperties"]; ok {
				if err := validate(doc, ap, x); err != nil {
					return fmt.Errorf("additional .%s: %w", k, err)
				}
			}
		}
	}
	return nil
}

func splitPointer(p string) []string {
	var out []string
	for _, t := range bytes.Split([]byte(p), []byte("/")) {
		s := string(bytes.ReplaceAll(bytes.ReplaceAll(t, []byte("~1"), []byte("/")), []byte("~0"), []byte("~")))
		out = append(out, s)
	}
	return out
}

func atoi(n json.Number) int {
	f, _ := strconv.ParseFloat(string(n), 64)
	return int(f)
}

func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, _ := strconv.ParseFloat(string(a), 64)
		y, _ := strconv.ParseFloat(string(bn), 64)
		return x == y
	case []any:
		bl, ok := b.([]any)
		return ok && len(a) == len(bl) && !slices.ContainsFunc(a, func(x any) bool {
			i := slices.Index(a, x)
			return !jsonEqual(x, bl[i])
		})
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, x := range a {
			if !jsonEqual(x, bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// decodeJSON decodes one JSON document with numbers kept as text; it fails on trailing data.
func decodeJSON(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}

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
