package grammar

// byteSet is a set of bytes, one bit each.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) union(o *byteSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// firstSets computes, for every node, the bytes a text it matches can begin with. push consults
// them before it opens a value, so a byte no alternative of an anyOf can begin with costs one
// look-up rather than a walk of every alternative (and of every path through nested anyOf and
// $ref, which a schema can make exponentially many). They are exact: no node matches the empty
// text, and each kind's first byte is known (only the nesting limit can still refuse one).
// checkCycles has ruled out a node that begins with itself, so the recursion ends.
func (b *Builder) firstSets() {
	nodes := b.g.nodes
	first := make([]byteSet, len(nodes))
	done := make([]bool, len(nodes))
	var anyValue byteSet
	for _, c := range []byte(`{["-0123456789tfn`) {
		anyValue.add(c)
	}
	var visit func(i int32) *byteSet
	visit = func(i int32) *byteSet {
		s := &first[i]
		if done[i] {
			return s
		}
		done[i] = true
		n := &nodes[i]
		switch n.kind {
		case kAny:
			*s = anyValue
		case kObject:
			s.add('{')
		case kArray:
			s.add('[')
		case kString:
			s.add('"')
		case kNumber:
			for _, c := range []byte("-0123456789") {
				s.add(c)
			}
		case kLiteral:
			for _, l := range n.lits {
				s.add(l[0])
			}
		case kAnyOf:
			for _, k := range n.kids {
				s.union(visit(k))
			}
		case kSeq, kRepeat:
			s.union(visit(n.kids[0]))
		}
		return s
	}
	for i := range nodes {
		visit(int32(i))
	}
	b.g.first = first
}
