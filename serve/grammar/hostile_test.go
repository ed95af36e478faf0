package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// dagSchema is an anyOf DAG of n levels: $defs/dK is anyOf [dK+1, dK+1], so the root reaches its
// one leaf (an integer) by 2^n paths. The root lists the definitions deepest first, so each is
// compiled (and cached) before the one that refers to it and the nesting limit never applies.
func dagSchema(n int) string {
	var defs, refs []string
	for k := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, k, k+1, k+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, n))
	for k := n; k >= 0; k-- {
		refs = append(refs, fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, k))
	}
	return `{"$defs":{` + strings.Join(defs, ",") + `},"anyOf":[` + strings.Join(refs, ",") + `]}`
}

// TestSchemaDAGIsLinear: the recognizer's work for a mask over a schema DAG grows with the
// number of distinct nodes, not with the number of paths through them. It used to follow every
// path for every byte a token could start with (2^n pushes per refused byte): at n = 21 a 2 KB
// request held the engine for 45 s, at n = 24 it ran the process out of memory.
func TestSchemaDAGIsLinear(t *testing.T) {
	voc := newSmallVocab()
	v := NewVocab(voc, voc.VocabSize())
	mask := NewMask(v.Size())
	var base int64
	for _, n := range []int{4, 8, 16, 24, 60} {
		g := compileSchema(t, dagSchema(n))
		mt := NewMatcher(g, v, []int{len(voc)})
		mt.Mask(mask)
		if !mask.Has(voc.id(t, "7")) || mask.Has(voc.id(t, `"`)) {
			t.Fatalf("n=%d: the mask at the start does not allow exactly the integers", n)
		}
		if !mt.AcceptBytes([]byte("12")) || !mt.CanEnd() {
			t.Fatalf("n=%d: 12 refused", n)
		}
		work := mt.m.work
		if n == 4 {
			base = work
		}
		t.Logf("n=%d: %d steps", n, work)
		if limit := base * int64(n) / 2; n > 4 && work > limit {
			t.Fatalf("n=%d: a mask and 2 bytes took %d steps; more than %d (n/4 times those of n=4): the paths are followed, not the nodes", n, work, limit)
		}
	}
}

// id returns the id of the token spelled s.
func (s smallVocab) id(t testing.TB, text string) int {
	for id, b := range s {
		if string(b) == text {
			return id
		}
	}
	t.Fatalf("no token %q in the small vocabulary", text)
	return -1
}

// wideConsts is an array whose items are an anyOf of n string consts.
func wideConsts(n int) string {
	alts := make([]string, n)
	for i := range alts {
		alts[i] = fmt.Sprintf(`{"const":"w%d"}`, i)
	}
	return `{"type":"array","items":{"anyOf":[` + strings.Join(alts, ",") + `]}}`
}

// stringsAndConst is an anyOf of n strings of different bounds and one const, which begins
// like them.
func stringsAndConst(n int) string {
	var alts []string
	for i := range n {
		alts = append(alts, fmt.Sprintf(`{"type":"string","maxLength":%d}`, 100+i))
	}
	return `{"anyOf":[` + strings.Join(append(alts, `{"const":"auto"}`), ",") + `]}`
}

// maskWork returns the recognizer's work for one Mask after prefix.
func maskWork(t *testing.T, g *Grammar, v *Vocab, prefix string) int64 {
	t.Helper()
	mt := NewMatcher(g, v, []int{151645})
	if !mt.AcceptBytes([]byte(prefix)) {
		t.Fatalf("prefix %q refused", prefix)
	}
	w := mt.m.work
	mt.Mask(NewMask(v.Size()))
	if mt.Err() != nil {
		t.Fatalf("after %q: %v", prefix, mt.Err())
	}
	return mt.m.work - w
}

// TestWideAnyOf: an anyOf over 19,000 consts costs about what one enum does per token, and
// every const in it can be written. The consts were alternatives of their own: a byte that
// began none of them walked all 19,000 (95 ms of engine time per token), and beyond the
// alternatives followed at once the list could not be written at all.
func TestWideAnyOf(t *testing.T) {
	_, v := qwenVocab(t)
	g := compileSchema(t, wideConsts(19000))
	for _, text := range []string{`["w0"]`, `["w9999","w18999"]`, `[ "w18999" , "w1" ]`} {
		if prefix, complete := accepts(g, v, text); !prefix || !complete {
			t.Errorf("%s refused", text)
		}
	}
	for _, prefix := range []string{`[`, `["w1`, `["w1",`} {
		if w := maskWork(t, g, v, prefix); w > 20000 {
			t.Errorf("a mask after %q took %d steps; want at most 20000", prefix, w)
		}
	}
}

// TestMixedHeadsMask: heads inside strings take the plain tokens as a bitset even when another
// head (a const beside them) is not inside a string. With the heads walked together one const
// made every string head walk the whole vocabulary: 4.9 million steps (600 ms) per token for
// 15 strings and a const, 330,000 for the common string-or-"auto".
func TestMixedHeadsMask(t *testing.T) {
	_, v := qwenVocab(t)
	one := maskWork(t, compileSchema(t, `{"type":"string","maxLength":100}`), v, `"a`)
	for _, n := range []int{1, 15} {
		if w := maskWork(t, compileSchema(t, stringsAndConst(n)), v, `"a`); w > int64(n+1)*2*one {
			t.Errorf("%d strings and a const: a mask took %d steps; want at most %d (twice one string's %d per head)", n, w, int64(n+1)*2*one, one)
		}
	}
}

// TestWorkBudget: a Matcher that needs more than its budget for one token stops with a
// *WorkError and allows nothing, rather than running on.
func TestWorkBudget(t *testing.T) {
	_, v := qwenVocab(t)
	g := compileSchema(t, stringsAndConst(15))
	mt := NewMatcher(g, v, []int{151645})
	if !mt.AcceptBytes([]byte(`"a`)) {
		t.Fatal(`"a refused`)
	}
	mt.SetBudget(1000)
	mask := NewMask(v.Size())
	mt.Mask(mask)
	var we *WorkError
	if !errors.As(mt.Err(), &we) || we.Limit != 1000 {
		t.Fatalf("Err after a mask over budget: %v; want a *WorkError of 1000", mt.Err())
	}
	for _, w := range mask {
		if w != 0 {
			t.Fatal("a mask over budget allows tokens")
		}
	}
	if mt.AcceptBytes([]byte("b")) || mt.Accept(151645) {
		t.Fatal("a Matcher over budget accepts more")
	}
}
