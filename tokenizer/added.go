package tokenizer

import "strings"

// matcher finds added tokens in text the way HF's AddedVocabulary::find_matches does: a
// leftmost-longest scan over all patterns (HF uses a daachorse Aho-Corasick automaton in
// LeftmostLongest mode), after which each match is filtered and widened by its flags. The
// longest pattern at a position is found by walking a byte trie of the patterns, so the cost does
// not grow with their number (Gemma has 6415, 6242 of them starting with "<unused").
type matcher struct {
	tokens []*addedSpec
	pats   []string // what is matched: content, or the normalized form for normalized tokens
	first  [256]bool
	single int // the only first byte when all patterns share one, else -1
	trie   patternTrie
}

// patternTrie is a byte trie of the patterns. Node 0 is the root; term[n] is the index of the
// pattern that ends at node n, or -1.
type patternTrie struct {
	edges map[uint64]int32 // node<<8 | byte -> child
	term  []int32
}

func (t *patternTrie) insert(p string, idx int) {
	n := int32(0)
	for i := 0; i < len(p); i++ {
		key := uint64(n)<<8 | uint64(p[i])
		c, ok := t.edges[key]
		if !ok {
			c = int32(len(t.term))
			t.term = append(t.term, -1)
			t.edges[key] = c
		}
		n = c
	}
	if t.term[n] < 0 { // the first of two identical patterns wins, as in a first-match scan
		t.term[n] = int32(idx)
	}
}

// longest returns the index of the longest pattern that s[i:] starts with, or -1.
func (t *patternTrie) longest(s string, i int) int {
	best, n := -1, int32(0)
	for j := i; j < len(s); j++ {
		c, ok := t.edges[uint64(n)<<8|uint64(s[j])]
		if !ok {
			break
		}
		n = c
		if t.term[n] >= 0 {
			best = int(t.term[n])
		}
	}
	return best
}

func newMatcher(tokens []*addedSpec, normalized bool) *matcher {
	if len(tokens) == 0 {
		return nil
	}
	size := 0
	for _, a := range tokens {
		size += len(a.content)
	}
	m := &matcher{tokens: tokens, single: -1, trie: patternTrie{edges: make(map[uint64]int32, size), term: []int32{-1}}}
	for _, a := range tokens {
		if normalized {
			m.pats = append(m.pats, a.normalized)
		} else {
			m.pats = append(m.pats, a.content)
		}
	}
	for i, p := range m.pats {
		m.first[p[0]] = true
		m.trie.insert(p, i)
	}
	n := 0
	for c := range m.first {
		if m.first[c] {
			n++
			m.single = c
		}
	}
	if n != 1 {
		m.single = -1
	}
	return m
}

// segment is a span of text: an added token (id >= 0) or plain text (id < 0).
type segment struct {
	start, end int
	id         int
}

// split appends to segs the segments of s, exactly as find_matches splits: plain spans between
// matches, matches widened by lstrip/rstrip, single_word matches dropped when they touch a word
// character, and special tokens ignored when skipSpecial is set (HF encode_special_tokens).
func (m *matcher) split(tab *[0x10000]uint8, s string, skipSpecial bool, segs []segment) []segment {
	if m == nil {
		return append(segs, segment{0, len(s), -1})
	}
	startOffset := 0
	i := 0
	for i < len(s) {
		// Next position whose byte can start a pattern.
		if m.single >= 0 {
			k := strings.IndexByte(s[i:], byte(m.single))
			if k < 0 {
				break
			}
			i += k
		} else if !m.first[s[i]] {
			i++
			continue
		}
		best := m.trie.longest(s, i)
		if best < 0 {
			i++
			continue
		}
		a := m.tokens[best]
		start, stop := i, i+len(m.pats[best])
		i = stop
		if skipSpecial && a.flags&addSpecial != 0 {
			continue
		}
		if a.flags&addSingleWord != 0 {
			startSpace := start == 0 || classOf(tab, lastRune(s, start))&clsW == 0
			stopSpace := stop == len(s) || classOf(tab, firstRune(s, stop))&clsW == 0
			if !startSpace || !stopSpace {
				continue
			}
		}
		if a.flags&addLstrip != 0 {
			ns := start
			for ns > 0 {
				r := lastRune(s, ns)
				if classOf(tab, r)&clsS == 0 {
					break
				}
				ns -= runeLen(r)
			}
			start = max(ns, startOffset)
		}
		if a.flags&addRstrip != 0 {
			for stop < len(s) {
				r, w := runeAt(s, stop)
				if classOf(tab, r)&clsS == 0 {
					break
				}
				stop += w
			}
		}
		if startOffset < start {
			segs = append(segs, segment{startOffset, start, -1})
		}
		segs = append(segs, segment{start, stop, int(a.id)})
		startOffset = stop
	}
	if startOffset != len(s) {
		segs = append(segs, segment{startOffset, len(s), -1})
	}
	return segs
}

func firstRune(s string, i int) rune {
	r, _ := runeAt(s, i)
	return r
}

func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}
