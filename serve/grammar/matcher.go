package grammar

// Matcher follows one generation through a grammar: Mask says which tokens may come next,
// Accept advances by the token chosen. A Matcher is not safe for concurrent use; the Grammar
// and Vocab it reads are.
type Matcher struct {
	v     *Vocab
	m     machine
	heads []int32
	eos   []int
	ended bool
	// Scratch of Mask's walk, kept between calls: heads and arena length per trie depth.
	levels [][]int32
	marks  []int
	// Accept's double buffer and compaction scratch.
	next  []int32
	spare []anode
	remap map[int32]int32
}

// NewMatcher starts a generation. eos lists the ids that may end it once the text is complete
// (the model's end-of-sequence ids); they are never allowed before.
func NewMatcher(g *Grammar, v *Vocab, eos []int) *Matcher {
	mt := &Matcher{v: v, m: machine{g: g}, eos: eos, remap: map[int32]int32{}}
	mt.heads = []int32{mt.m.start()}
	depth := max(v.full.maxDepth(), v.rest.maxDepth()) + 2
	mt.levels = make([][]int32, depth)
	mt.marks = make([]int, depth+1)
	return mt
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
// Only once the text has ended is the mask empty.
func (mt *Matcher) Mask(dst Mask) {
	clear(dst)
	if mt.ended {
		return
	}
	if mt.CanEnd() {
		for _, id := range mt.eos {
			if id >= 0 && id < mt.v.size {
				dst.set(id)
			}
		}
	}
	if left, ok := mt.inString(); ok {
		mt.v.addPlain(dst, left)
		mt.walk(&mt.v.rest, dst)
		return
	}
	mt.walk(&mt.v.full, dst)
}

// inString reports whether every head is between the characters of a string (or of a key that
// may be undeclared), where every plain token is allowed, and how many characters may still
// come (-1: any number).
func (mt *Matcher) inString() (left int32, ok bool) {
	left = 0
	for _, h := range mt.heads {
		f := mt.m.arena[h].f
		switch {
		case f.kind == kString && f.st == sIn:
			n := &mt.m.g.nodes[f.node]
			if n.maxLen < 0 {
				left = -1
			} else if left >= 0 {
				left = max(left, n.maxLen-f.n)
			}
		case f.kind == kKey && f.flag == 1 && f.used == 0:
			left = -1
		default:
			return 0, false
		}
	}
	return left, true
}

// walk adds the tokens of t that the heads accept: a depth-first walk of the trie in which each
// node steps its parent's heads by one byte, and a node no head survives skips its subtree.
func (mt *Matcher) walk(t *trie, dst Mask) {
	m := &mt.m
	base := len(m.arena)
	mt.levels[0] = mt.heads
	mt.marks[1] = base
	nodes := t.nodes
	for i := 0; i < len(nodes); {
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
	if mt.ended {
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
	if mt.ended {
		return false
	}
	base := len(mt.m.arena)
	heads := mt.heads
	var buf [2][]int32
	buf[0], buf[1] = mt.next[:0], nil
	for i, b := range bs {
		out := mt.m.stepAll(heads, b, buf[i&1][:0])
		buf[i&1] = out
		if len(out) == 0 {
			mt.m.arena = mt.m.arena[:base]
			return false
		}
		heads = out
	}
	if len(bs) == 0 {
		return true
	}
	mt.compact(heads)
	return true
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
	heads := mt.heads
	for _, b := range bs {
		heads = mt.m.stepAll(heads, b, nil)
		if len(heads) == 0 {
			return false
		}
	}
	return true
}
