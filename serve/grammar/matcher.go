package grammar

import "fmt"

// MaxTokenWork bounds the recognizer's work (steps of a head by a byte, and values opened) for
// one Mask or one Accept. An ordinary schema needs a few thousand steps per token, the costliest
// states one has measured (sixteen strings of different bounds alive at once) about 80,000; a
// grammar that needs more is ended with a *WorkError rather than allowed to hold the server.
const MaxTokenWork = 1 << 20

// WorkError is what a Matcher reports once a Mask or Accept needed more work than its budget.
type WorkError struct {
	Limit int64
}

// Error says what was exceeded and what to change.
func (e *WorkError) Error() string {
	return fmt.Sprintf("the grammar needs more than %d recognizer steps to choose one token; use a schema with fewer alternatives alive at once (anyOf whose alternatives begin alike)", e.Limit)
}

// Matcher follows one generation through a grammar: Mask says which tokens may come next,
// Accept advances by the token chosen. A Matcher is not safe for concurrent use; the Grammar
// and Vocab it reads are.
type Matcher struct {
	v      *Vocab
	m      machine
	heads  []int32
	eos    []int
	ended  bool
	budget int64 // work allowed per Mask or Accept
	err    error // a *WorkError once the budget was exceeded
	// Scratch of Mask's walk, kept between calls: heads and arena length per trie depth.
	levels [][]int32
	marks  []int
	// Accept's buffers and compaction scratch.
	buf   [2][]int32
	next  []int32
	spare []anode
	remap map[int32]int32
}

// NewMatcher starts a generation. eos lists the ids that may end it once the text is complete
// (the model's end-of-sequence ids); they are never allowed before.
func NewMatcher(g *Grammar, v *Vocab, eos []int) *Matcher {
	mt := &Matcher{v: v, m: machine{g: g, limit: MaxTokenWork}, eos: eos, budget: MaxTokenWork, remap: map[int32]int32{}}
	mt.heads = []int32{mt.m.start()}
	depth := max(v.full.maxDepth(), v.rest.maxDepth()) + 2
	mt.levels = make([][]int32, depth)
	mt.marks = make([]int, depth+1)
	return mt
}

// SetBudget sets the work one Mask or Accept may take (MaxTokenWork by default).
func (mt *Matcher) SetBudget(work int64) { mt.budget = work }

// Err returns a *WorkError once a Mask or Accept exceeded the budget, and nil before. From then
// on the Matcher allows nothing.
func (mt *Matcher) Err() error { return mt.err }

// begin starts the budget of one Mask or Accept.
func (mt *Matcher) begin() { mt.m.limit, mt.m.over = mt.m.work+mt.budget, false }

// overrun records an exceeded budget and reports whether there was one.
func (mt *Matcher) overrun() bool {
	if !mt.m.over {
		return false
	}
	if mt.err == nil {
		mt.err = &WorkError{Limit: mt.budget}
	}
	return true
}

// CanEnd reports whether the text so far is complete, so an end-of-sequence id is allowed.
func (mt *Matcher) CanEnd() bool {
	base := len(mt.m.arena)
	defer func() { mt.m.arena = mt.m.arena[:base] }()
	for _, h := range mt.heads {
		if mt.m.finish(h) {
			return true
		}
	}
	return false
}

// Ended reports whether an end-of-sequence id was accepted.
func (mt *Matcher) Ended() bool { return mt.ended }

// Mask sets dst (of NewMask(v.Size()) words or more) to the tokens that may come next: those
// whose bytes keep the text a viable prefix, and the end-of-sequence ids once it is complete.
// Only once the text has ended, or the budget was exceeded (Err), is the mask empty.
//
// A token is allowed when some head accepts it, so each head is walked on its own and the
// results are joined: a head between the characters of a string takes every plain token as one
// bitset and walks only the other tokens, whatever the other heads are doing (walked together,
// one head outside a string made every head walk the whole vocabulary). Accept steps each head
// on its own in the same way, so the two agree on every token.
func (mt *Matcher) Mask(dst Mask) {
	clear(dst)
	if mt.ended || mt.err != nil {
		return
	}
	mt.begin()
	if mt.CanEnd() {
		for _, id := range mt.eos {
			if id >= 0 && id < mt.v.size {
				dst.set(id)
			}
		}
	}
	for i, h := range mt.heads {
		one := mt.heads[i : i+1]
		if left, ok := mt.inString(h); ok {
			mt.v.addPlain(dst, left)
			mt.walk(&mt.v.rest, one, dst)
		} else {
			mt.walk(&mt.v.full, one, dst)
		}
		if mt.overrun() {
			clear(dst)
			return
		}
	}
}

// inString reports whether head h is between the characters of a string (or of a key that may
// be undeclared), where every plain token is allowed, and how many characters may still come
// (-1: any number).
func (mt *Matcher) inString(h int32) (left int32, ok bool) {
	f := mt.m.arena[h].f
	switch {
	case f.kind == kString && f.st == sIn:
		n := &mt.m.g.nodes[f.node]
		if n.maxLen < 0 {
			return -1, true
		}
		return n.maxLen - f.n, true
	case f.kind == kKey && f.flag == 1 && f.used == 0:
		return -1, true
	}
	return 0, false
}

// walk adds the tokens of t that heads accept: a depth-first walk of the trie in which each
// node steps its parent's heads by one byte, and a node no head survives skips its subtree.
func (mt *Matcher) walk(t *trie, heads []int32, dst Mask) {
	m := &mt.m
	base := len(m.arena)
	mt.levels[0] = heads
	mt.marks[1] = base
	nodes := t.nodes
	for i := 0; i < len(nodes) && !m.over; {
		nd := &nodes[i]
		d := int(nd.depth)
		m.arena = m.arena[:mt.marks[d]]
		next := m.stepAll(mt.levels[d-1], nd.b, mt.levels[d][:0])
		mt.levels[d] = next
		if len(next) == 0 {
			i = int(nd.end)
			continue
		}
		mt.marks[d+1] = len(m.arena)
		for _, id := range t.toks[nd.tok : nd.tok+nd.ntok] {
			dst[id>>6] |= 1 << (id & 63)
		}
		i++
	}
	m.arena = m.arena[:base]
	mt.levels[0] = nil
}

// Accept advances by token id and reports whether it was allowed; a token that was not leaves
// the state as it was. An end-of-sequence id is allowed once the text is complete, and ends it.
func (mt *Matcher) Accept(id int) bool {
	if mt.ended || mt.err != nil {
		return false
	}
	for _, e := range mt.eos {
		if id == e {
			if !mt.CanEnd() {
				return false
			}
			mt.ended = true
			return true
		}
	}
	if id < 0 || id >= len(mt.v.bytes) || mt.v.bytes[id] == nil {
		return false
	}
	return mt.AcceptBytes(mt.v.bytes[id])
}

// AcceptBytes advances by raw bytes, as Accept does by a token's.
func (mt *Matcher) AcceptBytes(bs []byte) bool {
	if mt.ended || mt.err != nil {
		return false
	}
	if len(bs) == 0 {
		return true
	}
	mt.begin()
	base := len(mt.m.arena)
	all := mt.next[:0]
	for _, h := range mt.heads {
		all = mt.advance(h, bs, all)
	}
	if mt.overrun() || len(all) == 0 {
		mt.m.arena = mt.m.arena[:base]
		mt.next = all[:0]
		return false
	}
	mt.compact(mt.m.dedupe(all))
	return true
}

// advance steps head h through bs, as Mask's walk steps it through a token's bytes, and
// appends the heads that survive to out.
func (mt *Matcher) advance(h int32, bs []byte, out []int32) []int32 {
	cur := append(mt.buf[0][:0], h)
	mt.buf[0] = cur
	for i, b := range bs {
		k := (i + 1) & 1
		mt.buf[k] = mt.m.stepAll(cur, b, mt.buf[k][:0])
		cur = mt.buf[k]
		if len(cur) == 0 {
			return out
		}
	}
	return append(out, cur...)
}

// compact keeps only the frames of the live heads, so the arena does not grow with the text.
func (mt *Matcher) compact(heads []int32) {
	old := mt.m.arena
	clear(mt.remap)
	mt.m.arena = mt.spare[:0]
	live := make([]int32, len(heads))
	for i, h := range heads {
		live[i] = mt.copyFrame(old, h)
	}
	mt.spare = old[:0]
	mt.heads = live
	mt.next = heads[:0]
}

func (mt *Matcher) copyFrame(old []anode, h int32) int32 {
	if h < 0 {
		return -1
	}
	if n, ok := mt.remap[h]; ok {
		return n
	}
	a := old[h]
	a.parent = mt.copyFrame(old, a.parent)
	mt.m.arena = append(mt.m.arena, a)
	n := int32(len(mt.m.arena) - 1)
	mt.remap[h] = n
	return n
}

// try reports whether bs would be accepted, without accepting it.
func (mt *Matcher) try(bs []byte) bool {
	base := len(mt.m.arena)
	defer func() { mt.m.arena = mt.m.arena[:base] }()
	mt.begin()
	for _, h := range mt.heads {
		if len(mt.advance(h, bs, nil)) > 0 {
			return true
		}
	}
	return false
}
