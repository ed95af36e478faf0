package grammar

import (
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
