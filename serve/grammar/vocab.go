package grammar

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// TokenSource is what a Vocab needs from a tokenizer: the bytes each id decodes to, and which
// ids are special (never part of generated text; an end-of-sequence id is allowed separately).
// *tokenizer.Tokenizer implements it.
type TokenSource interface {
	VocabSize() int
	TokenBytes(id int) []byte
	IsSpecial(id int) bool
}

// plainBounded is how many per-length masks of plain tokens a Vocab keeps: strings with fewer
// than this many characters left use one; longer bounds clear the few longer tokens instead.
const plainBounded = 32

// Vocab is a tokenizer's vocabulary prepared for masking: built once per tokenizer (it takes a
// fraction of a second for 150k tokens) and shared by every Matcher, read-only.
type Vocab struct {
	size  int      // ids in a mask (the model's vocabulary, which may exceed the tokenizer's)
	bytes [][]byte // the bytes of each id; nil: never allowed by a grammar
	full  trie     // every allowed token
	rest  trie     // the tokens that are not plain string content
	// plain holds the tokens that can continue any JSON string as they are: printable ASCII
	// but '"' and '\', and whole UTF-8 characters. Inside a string (most of a JSON text's
	// tokens) they are all allowed, so only rest has to be walked.
	plain Mask
	// plainUpTo[k] holds the plain tokens of at most k characters, for k < plainBounded;
	// long lists the longer plain tokens, longest first, with their lengths.
	plainUpTo []Mask
	long      []int32
	longRunes []int32
}

// Mask is a set of token ids, one bit each (bit id%64 of word id/64), as runtime.Mask.
type Mask []uint64

func (m Mask) set(id int) { m[id>>6] |= 1 << (id & 63) }

// Has reports whether id is in the mask.
func (m Mask) Has(id int) bool { return id >= 0 && id>>6 < len(m) && m[id>>6]&(1<<(id&63)) != 0 }

// NewMask returns an empty mask for size ids.
func NewMask(size int) Mask { return make(Mask, (size+63)/64) }

// NewVocab prepares the vocabulary of tok for a model whose logits have size entries.
func NewVocab(tok TokenSource, size int) *Vocab {
	v := &Vocab{size: size, bytes: make([][]byte, size), plain: NewMask(size)}
	var all, rest []int32
	runes := make([]int32, size)
	for id := range min(size, tok.VocabSize()) {
		if tok.IsSpecial(id) {
			continue
		}
		b := tok.TokenBytes(id)
		if len(b) == 0 {
			continue
		}
		v.bytes[id] = b
		all = append(all, int32(id))
		if n, ok := plainRunes(b); ok {
			v.plain.set(id)
			runes[id] = n
			continue
		}
		rest = append(rest, int32(id))
	}
	v.full = buildTrie(v.bytes, all)
	v.rest = buildTrie(v.bytes, rest)
	v.plainUpTo = make([]Mask, plainBounded)
	for k := range v.plainUpTo {
		v.plainUpTo[k] = NewMask(size)
	}
	for _, id := range all {
		if !v.plain.Has(int(id)) {
			continue
		}
		n := runes[id]
		if n >= plainBounded {
			v.long = append(v.long, id)
			continue
		}
		for k := n; k < plainBounded; k++ {
			v.plainUpTo[k].set(int(id))
		}
	}
	slices.SortFunc(v.long, func(a, b int32) int { return int(runes[b] - runes[a]) })
	for _, id := range v.long {
		v.longRunes = append(v.longRunes, runes[id])
	}
	return v
}

// Size returns the number of ids a mask covers.
func (v *Vocab) Size() int { return v.size }

// plainRunes returns the characters of b when b can continue any JSON string unchanged.
func plainRunes(b []byte) (int32, bool) {
	if !utf8.Valid(b) {
		return 0, false
	}
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return 0, false
		}
	}
	return int32(utf8.RuneCount(b)), true
}

// addPlain adds to dst the plain tokens of at most left characters (left < 0: any length).
func (v *Vocab) addPlain(dst Mask, left int32) {
	var src Mask
	switch {
	case left < 0 || left >= plainBounded:
		src = v.plain
	default:
		src = v.plainUpTo[left]
	}
	for i, w := range src {
		dst[i] |= w
	}
	if left >= plainBounded {
		for i, id := range v.long {
			if v.longRunes[i] <= left {
				break
			}
			dst[id>>6] &^= 1 << (id & 63) // too long for what is left (never in rest: no clash)
		}
	}
}

// trie holds token byte strings in depth-first order: a node's subtree is the nodes up to end.
type trie struct {
	nodes []trieNode
	toks  []int32 // token ids, grouped by node
}

type trieNode struct {
	b     byte
	depth uint16 // 1 for a first byte
	end   int32  // the index after this node's subtree
	tok   int32  // the tokens ending here are toks[tok:tok+ntok]
	ntok  int32
}

func buildTrie(byID [][]byte, ids []int32) trie {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(byID[a], byID[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	var t trie
	var prev []byte
	open := []int32{} // the nodes of prev's path
	for _, id := range ids {
		s := byID[id]
		if len(s) > 0xFFFF {
			continue // no tokenizer has such tokens; a depth must fit 16 bits
		}
		lcp := 0
		for lcp < len(s) && lcp < len(prev) && s[lcp] == prev[lcp] {
			lcp++
		}
		open = open[:lcp]
		for d := lcp; d < len(s); d++ {
			t.nodes = append(t.nodes, trieNode{b: s[d], depth: uint16(d + 1)})
			open = append(open, int32(len(t.nodes)-1))
		}
		last := &t.nodes[open[len(s)-1]]
		if last.ntok == 0 {
			last.tok = int32(len(t.toks))
		}
		last.ntok++
		t.toks = append(t.toks, id)
		prev = s
	}
	// Each node's subtree ends at the next node that is not deeper.
	var stack []int32
	for i, nd := range t.nodes {
		for len(stack) > 0 && t.nodes[stack[len(stack)-1]].depth >= nd.depth {
			t.nodes[stack[len(stack)-1]].end = int32(i)
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, int32(i))
	}
	for _, i := range stack {
		t.nodes[i].end = int32(len(t.nodes))
	}
	return t
}

func (t *trie) maxDepth() int {
	d := 0
	for _, nd := range t.nodes {
		d = max(d, int(nd.depth))
	}
	return d
}

// TokenBytes returns the bytes of id as the grammar sees them (nil for an id a grammar never
// allows: special, unknown or empty).
func (v *Vocab) TokenBytes(id int) []byte {
	if id < 0 || id >= len(v.bytes) {
		return nil
	}
	return v.bytes[id]
}
