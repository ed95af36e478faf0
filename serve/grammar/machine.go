package grammar

import (
	"math/bits"
	"sort"
)

// The recognizer. Its state is a set of heads, each the top of a stack of frames; frames live in
// an arena and point at their parent, so stacks are persistent: stepping a head by one byte
// appends the one or two frames that change and shares the rest. A caller that tries bytes and
// backs off (the trie walk of Matcher.Mask) just truncates the arena.

// Frame states, per kind.
const (
	// kObject
	oStart   uint8 = iota // after '{': a key or '}'
	oInKey                // the key's frame is above
	oColon                // after the key: ':'
	oValue                // after ':': the value
	oInValue              // the value's frame is above
	oAfter                // after a value: ',' or '}'
	oComma                // after ',': a key
)

const (
	// kArray
	aStart uint8 = iota // after '[': an item or ']'
	aIn                 // an item's frame is above
	aAfter              // after an item: ',' or ']'
	aComma              // after ',': an item
)

const (
	// kString (and the free part of kKey)
	sIn    uint8 = iota // between characters
	sEsc                // after '\'
	sHex                // in \uXXXX: lo is the value so far, hi the digits read
	sLowBS              // after a high surrogate: '\' of its low half
	sLowU               // then 'u'
	sUTF8               // inside a multi-byte character: used holds what the next byte may be
)

const (
	// kNumber
	nMinus uint8 = iota
	nZero        // a leading 0: complete
	nInt         // integer digits: complete
	nDot         // after '.'
	nFrac        // fraction digits: complete
	nE           // after 'e'
	nESign       // after the exponent's sign
	nExp         // exponent digits: complete
)

const (
	// kSeq
	qExpect uint8 = iota // the next part (n) begins with the next byte
	qIn                  // part n's frame is above
)

const (
	// kRepeat
	rIn     uint8 = iota // an item's frame is above
	rAfter               // after an item: the separator, or the end
	rSep                 // inside the separator (lo bytes matched)
	rExpect              // after the separator: the next item
)

const (
	// kRoot
	rootExpect uint8 = iota
	rootIn
	rootDone
)

// frame is the state of one open value. Field use depends on kind (see the states above):
//
//	n:      string characters, array or repeat items, seq part, literal or key position, number
//	        digits in the current part, object property being given (-1: an additional one)
//	lo, hi: literal and key candidates (a range of the sorted literals); \u escape value and
//	        digits; the separator position of a repeat
//	used:   object properties given (bit i: props[i]); UTF-8 continuation state of strings and keys
//	flag:   string: a low surrogate must follow; key: the key may still be one not declared
type frame struct {
	node   int32
	kind   kind
	st     uint8
	ws     uint8 // whitespace bytes in the current run
	flag   uint8
	n      int32
	lo, hi int32
	used   uint64
}

// anode is a frame in the arena.
type anode struct {
	f      frame
	parent int32 // -1 under the root frame
	depth  uint16
}

type machine struct {
	g     *Grammar
	arena []anode
	// work counts the steps and pushes made, the unit of what a grammar costs. Past limit the
	// machine refuses every byte and sets over, so a walk ends within a bounded time.
	work, limit int64
	over        bool
	// seen[x] == stamp marks the nodes one push has opened under its parent already (see
	// pushAlts).
	seen  []uint32
	stamp uint32
}

func (m *machine) put(f frame, parent int32) int32 {
	var d uint16
	if parent >= 0 {
		d = m.arena[parent].depth + 1
	}
	m.arena = append(m.arena, anode{f: f, parent: parent, depth: d})
	return int32(len(m.arena) - 1)
}

// replace returns a new head with f in place of h's frame.
func (m *machine) replace(h int32, f frame) int32 { return m.put(f, m.arena[h].parent) }

func (m *machine) parent(h int32) int32 { return m.arena[h].parent }

// start returns the initial head.
func (m *machine) start() int32 { return m.put(frame{kind: kRoot, node: m.g.root}, -1) }

func addHead(out []int32, h int32) []int32 {
	if h < 0 {
		return out
	}
	return append(out, h)
}

func isWS(b byte) bool { return b == ' ' || b == '\n' || b == '\r' || b == '\t' }

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// stepAll steps every head by b and returns the distinct heads that survive, appended to out.
func (m *machine) stepAll(heads []int32, b byte, out []int32) []int32 {
	start := len(out)
	for _, h := range heads {
		out = m.step(h, b, out)
		if len(out)-start > pushCap {
			out = append(out[:start], m.dedupe(out[start:])...)
		}
	}
	if len(out)-start > 1 {
		out = append(out[:start], m.dedupe(out[start:])...)
	}
	return out
}

// dedupe drops heads equal to an earlier one (two alternatives that arrived at the same state),
// in place, and keeps at most maxHeads.
func (m *machine) dedupe(heads []int32) []int32 {
	out := heads[:0]
	for _, h := range heads {
		dup := false
		for _, o := range out {
			if m.same(h, o) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, h)
		}
	}
	return out[:min(len(out), maxHeads)]
}

// same reports whether two stacks hold the same frames.
func (m *machine) same(a, b int32) bool {
	for a != b {
		if a < 0 || b < 0 {
			return false
		}
		x, y := &m.arena[a], &m.arena[b]
		if x.f != y.f || x.depth != y.depth {
			return false
		}
		a, b = x.parent, y.parent
	}
	return true
}

// step advances head h by byte b and appends the resulting heads (none when b is not allowed).
func (m *machine) step(h int32, b byte, out []int32) []int32 {
	if m.work++; m.work > m.limit {
		m.over = true
		return out
	}
	f := m.arena[h].f
	switch f.kind {
	case kRoot:
		if f.st != rootExpect {
			return out
		}
		f.st = rootIn
		return m.push(m.replace(h, f), m.g.root, b, out)
	case kObject:
		return m.stepObject(h, f, b, out)
	case kKey:
		return m.stepKey(h, f, b, out)
	case kArray:
		return m.stepArray(h, f, b, out)
	case kString:
		return m.stepString(h, f, b, out)
	case kNumber:
		return m.stepNumber(h, f, b, out)
	case kLiteral:
		lits := m.g.nodes[f.node].lits
		lo, hi := narrow(lits, f.lo, f.hi, f.n, b)
		if lo < hi {
			pos := f.n + 1
			if hi-lo == 1 && int32(len(lits[lo])) == pos {
				return addHead(out, m.complete(m.parent(h), -1))
			}
			f.lo, f.hi, f.n = lo, hi, pos
			return append(out, m.replace(h, f))
		}
		if int32(len(lits[f.lo])) == f.n { // complete, and b belongs to what follows
			return m.pass(h, b, out)
		}
		return out
	case kSeq:
		f.st = qIn
		return m.push(m.replace(h, f), m.g.nodes[f.node].kids[f.n], b, out)
	case kRepeat:
		return m.stepRepeat(h, f, b, out)
	}
	return out
}

// pass completes h's value, which b does not continue, and gives b to the frame below.
func (m *machine) pass(h int32, b byte, out []int32) []int32 {
	p := m.complete(m.parent(h), -1)
	if p < 0 {
		return out
	}
	return m.step(p, b, out)
}

// push starts a value of node x above parent with its first byte b.
func (m *machine) push(parent, x int32, b byte, out []int32) []int32 {
	if m.work++; m.work > m.limit {
		m.over = true
		return out
	}
	if m.arena[parent].depth >= MaxDepth {
		return out
	}
	g := m.g
	if !g.first[x].has(b) {
		return out
	}
	n := &g.nodes[x]
	switch n.kind {
	case kAnyOf:
		return m.pushAlts(parent, x, b, out, m.newStamp())
	case kAny:
		switch {
		case b == '{':
			return m.push(parent, g.anyObject, b, out)
		case b == '[':
			return m.push(parent, g.anyArray, b, out)
		case b == '"':
			return m.push(parent, g.anyString, b, out)
		case b == '-' || isDigit(b):
			return m.push(parent, g.anyNumber, b, out)
		case b == 't' || b == 'f' || b == 'n':
			return m.push(parent, g.anyLiteral, b, out)
		}
	case kObject:
		if b == '{' {
			return append(out, m.put(frame{kind: kObject, node: x, st: oStart}, parent))
		}
	case kArray:
		if b == '[' {
			return append(out, m.put(frame{kind: kArray, node: x, st: aStart}, parent))
		}
	case kString:
		if b == '"' {
			return append(out, m.put(frame{kind: kString, node: x, st: sIn}, parent))
		}
	case kNumber:
		f := frame{kind: kNumber, node: x}
		switch {
		case b == '-':
			f.st = nMinus
		case b == '0':
			f.st = nZero
		case b >= '1' && b <= '9':
			f.st, f.n = nInt, 1
		default:
			return out
		}
		return append(out, m.put(f, parent))
	case kLiteral:
		return m.step(m.put(frame{kind: kLiteral, node: x, hi: int32(len(n.lits))}, parent), b, out)
	case kSeq:
		return m.push(m.put(frame{kind: kSeq, node: x, st: qIn}, parent), n.kids[0], b, out)
	case kRepeat:
		return m.push(m.put(frame{kind: kRepeat, node: x, st: rIn}, parent), n.kids[0], b, out)
	}
	return out
}

// pushAlts starts the alternatives of anyOf node x above parent with byte b. Nested anyOf
// are followed in place, and each node is opened at most once per push (marked with stamp):
// opened twice under the same parent with the same byte it would give the same heads, and
// through nested anyOf and $ref a schema can reach one node by exponentially many paths.
// Alternatives that cannot begin with b are skipped without a walk.
func (m *machine) pushAlts(parent, x int32, b byte, out []int32, stamp uint32) []int32 {
	g := m.g
	for _, k := range g.nodes[x].kids {
		if len(out) >= pushCap {
			break // more alternatives than are followed: the rest are dropped (see maxHeads)
		}
		if m.seen[k] == stamp || !g.first[k].has(b) {
			continue
		}
		m.seen[k] = stamp
		m.work++
		if g.nodes[k].kind == kAnyOf {
			out = m.pushAlts(parent, k, b, out, stamp)
		} else {
			out = m.push(parent, k, b, out)
		}
	}
	return out
}

// newStamp returns a mark no node of seen holds yet.
func (m *machine) newStamp() uint32 {
	if m.seen == nil {
		m.seen = make([]uint32, len(m.g.nodes))
	}
	m.stamp++
	if m.stamp == 0 { // wrapped: forget the old marks
		clear(m.seen)
		m.stamp = 1
	}
	return m.stamp
}

// complete is called on frame h when the value above it has ended; res says which property a
// key was (-1: an undeclared one, or not a key). It returns the new head, or -1 when the value
// cannot go there after all (a property given twice).
func (m *machine) complete(h, res int32) int32 {
	if h < 0 {
		return -1
	}
	f := m.arena[h].f
	n := &m.g.nodes[f.node]
	switch f.kind {
	case kRoot:
		f.st = rootDone
	case kObject:
		if f.st == oInKey {
			if res >= 0 && f.used&(1<<res) != 0 {
				return -1
			}
			if res < 0 && n.addl < 0 {
				return -1
			}
			f.st, f.n = oColon, res
		} else {
			if f.n >= 0 {
				f.used |= 1 << f.n
			}
			f.st, f.n = oAfter, 0
		}
	case kArray:
		f.st = aAfter
		f.n = saturate(f.n+1, n.minItems, n.maxItems)
	case kSeq:
		f.n++
		if int(f.n) == len(n.kids) {
			return m.complete(m.parent(h), -1)
		}
		f.st = qExpect
	case kRepeat:
		f.n = saturate(f.n+1, n.min, n.max)
		f.st = rAfter
		if n.max >= 0 && f.n >= n.max {
			return m.complete(m.parent(h), -1)
		}
	default:
		return -1
	}
	f.ws = 0
	return m.replace(h, f)
}

// saturate counts up to max, or, without a maximum, up to min: beyond it the count no longer
// matters, and equal states stay equal.
func saturate(n, min, max int32) int32 {
	if max < 0 && n > min {
		return min
	}
	return n
}

func (m *machine) stepObject(h int32, f frame, b byte, out []int32) []int32 {
	n := &m.g.nodes[f.node]
	if isWS(b) {
		if f.ws >= MaxWhitespace {
			return out
		}
		f.ws++
		return append(out, m.replace(h, f))
	}
	f.ws = 0
	switch f.st {
	case oStart, oComma:
		if b == '"' {
			return m.startKey(h, f, n, out)
		}
		if b == '}' && f.st == oStart && f.used&n.required == n.required {
			return addHead(out, m.complete(m.parent(h), -1))
		}
	case oColon:
		if b == ':' {
			f.st = oValue
			return append(out, m.replace(h, f))
		}
	case oValue:
		child := n.addl
		if f.n >= 0 {
			child = n.props[f.n].node
		}
		f.st = oInValue
		return m.push(m.replace(h, f), child, b, out)
	case oAfter:
		switch b {
		case ',':
			if canAddKey(f, n) {
				f.st = oComma
				return append(out, m.replace(h, f))
			}
		case '}':
			if f.used&n.required == n.required {
				return addHead(out, m.complete(m.parent(h), -1))
			}
		}
	}
	return out
}

func canAddKey(f frame, n *node) bool {
	return n.addl >= 0 || bits.OnesCount64(f.used) < len(n.props)
}

// startKey opens a key after its '"'.
func (m *machine) startKey(h int32, f frame, n *node, out []int32) []int32 {
	if !canAddKey(f, n) {
		return out
	}
	f.st = oInKey
	p := m.replace(h, f)
	if len(n.props) == 0 {
		return append(out, m.put(frame{kind: kString, node: m.g.keyString, st: sIn}, p))
	}
	k := frame{kind: kKey, node: f.node, n: 1, hi: int32(len(n.props))}
	if n.addl >= 0 {
		k.flag = 1
	}
	return append(out, m.put(k, p))
}

// stepKey matches a key of an object with declared properties: against their names as
// literals and, when undeclared properties are allowed, as any other key. Undeclared keys are
// written without escapes, so that one cannot spell a declared name in another way.
func (m *machine) stepKey(h int32, f frame, b byte, out []int32) []int32 {
	n := &m.g.nodes[f.node]
	obj := m.parent(h)
	given := m.arena[obj].f.used
	lo, hi := narrowProps(n.props, f.lo, f.hi, f.n, b)
	if b == '"' {
		if lo < hi && int32(len(n.props[lo].lit)) == f.n+1 { // a declared name, complete
			if given&(1<<lo) != 0 {
				return out
			}
			return addHead(out, m.complete(obj, lo))
		}
		if f.flag == 1 && f.used == 0 { // an undeclared key ends
			return addHead(out, m.complete(obj, -1))
		}
	}
	free := f.flag == 1
	if free {
		switch {
		case b == '\\' || b == '"' || b < 0x20:
			free = false
		default:
			st, ok, _ := utf8Step(f.used, b)
			free, f.used = ok, st
		}
	}
	alive := false
	for i := lo; i < hi; i++ {
		if given&(1<<i) == 0 {
			alive = true
			break
		}
	}
	if !free {
		if !alive {
			return out
		}
		f.flag, f.used = 0, 0
	}
	f.lo, f.hi, f.n = lo, hi, f.n+1
	return append(out, m.replace(h, f))
}

func (m *machine) stepArray(h int32, f frame, b byte, out []int32) []int32 {
	n := &m.g.nodes[f.node]
	if isWS(b) {
		if f.ws >= MaxWhitespace {
			return out
		}
		f.ws++
		return append(out, m.replace(h, f))
	}
	f.ws = 0
	switch f.st {
	case aStart:
		if b == ']' {
			if n.minItems == 0 {
				return addHead(out, m.complete(m.parent(h), -1))
			}
			return out
		}
		if n.maxItems == 0 {
			return out
		}
		f.st = aIn
		return m.push(m.replace(h, f), n.items, b, out)
	case aAfter:
		if b == ',' && (n.maxItems < 0 || f.n < n.maxItems) {
			f.st = aComma
			return append(out, m.replace(h, f))
		}
		if b == ']' && f.n >= n.minItems {
			return addHead(out, m.complete(m.parent(h), -1))
		}
	case aComma:
		f.st = aIn
		return m.push(m.replace(h, f), n.items, b, out)
	}
	return out
}

func (m *machine) stepString(h int32, f frame, b byte, out []int32) []int32 {
	n := &m.g.nodes[f.node]
	canStart := n.maxLen < 0 || f.n < n.maxLen
	switch f.st {
	case sIn:
		switch {
		case b == '"':
			if f.n < n.minLen {
				return out
			}
			return addHead(out, m.complete(m.parent(h), -1))
		case !canStart || b < 0x20:
			return out
		case b == '\\':
			f.st = sEsc
		case b < 0x80:
			f.n = countChar(f.n, n)
		default:
			st, ok, _ := utf8Step(0, b)
			if !ok {
				return out
			}
			f.st, f.used = sUTF8, st
		}
	case sUTF8:
		st, ok, done := utf8Step(f.used, b)
		if !ok {
			return out
		}
		f.used = st
		if done {
			f.st, f.n = sIn, countChar(f.n, n)
		}
	case sEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.st, f.n = sIn, countChar(f.n, n)
		case 'u':
			f.st, f.lo, f.hi = sHex, 0, 0
		default:
			return out
		}
	case sHex:
		d := hexDigit(b)
		if d < 0 {
			return out
		}
		f.lo, f.hi = f.lo*16+d, f.hi+1
		// Refuse at once a \u escape that could only end as a lone low surrogate, or a low half
		// that is not one, so that no accepted prefix is a dead end.
		switch {
		case f.flag == 1 && f.hi == 1 && f.lo != 0xD,
			f.flag == 1 && f.hi == 2 && f.lo < 0xDC,
			f.flag == 0 && f.hi == 2 && f.lo >= 0xDC && f.lo <= 0xDF:
			return out
		}
		if f.hi < 4 {
			break
		}
		v := f.lo
		f.lo, f.hi = 0, 0
		switch {
		case f.flag == 1: // the low half of a surrogate pair
			if v < 0xDC00 || v > 0xDFFF {
				return out
			}
			f.flag, f.st, f.n = 0, sIn, countChar(f.n, n)
		case v >= 0xD800 && v <= 0xDBFF:
			f.st = sLowBS
		case v >= 0xDC00 && v <= 0xDFFF: // a lone low surrogate is not a character
			return out
		default:
			f.st, f.n = sIn, countChar(f.n, n)
		}
	case sLowBS:
		if b != '\\' {
			return out
		}
		f.st = sLowU
	case sLowU:
		if b != 'u' {
			return out
		}
		f.st, f.flag = sHex, 1
	}
	return append(out, m.replace(h, f))
}

// countChar counts one more character of a string; beyond what the bounds care about it stops
// counting, so equal states stay equal.
func countChar(c int32, n *node) int32 {
	if n.maxLen < 0 && c >= n.minLen {
		return c
	}
	return c + 1
}

func hexDigit(b byte) int32 {
	switch {
	case b >= '0' && b <= '9':
		return int32(b - '0')
	case b >= 'a' && b <= 'f':
		return int32(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int32(b-'A') + 10
	}
	return -1
}

// utf8Step checks one byte of UTF-8 given the state of the character in progress (0: none):
// bytes left (bits 0-7) and the range of the next byte (bits 8-15 and 16-23), which is how
// overlong forms, surrogates and code points beyond U+10FFFF are refused (RFC 3629). It returns
// the next state, whether b was allowed, and whether it ended a character. ASCII bytes are
// allowed here; the caller rules out quotes and controls.
func utf8Step(st uint64, b byte) (next uint64, ok, done bool) {
	const cont = 0x80<<8 | 0xBF<<16
	if st != 0 {
		rem, lo, hi := st&0xFF, byte(st>>8), byte(st>>16)
		if b < lo || b > hi {
			return 0, false, false
		}
		if rem == 1 {
			return 0, true, true
		}
		return (rem - 1) | cont, true, false
	}
	switch {
	case b < 0x80:
		return 0, true, true
	case b >= 0xC2 && b <= 0xDF:
		return 1 | cont, true, false
	case b == 0xE0:
		return 2 | 0xA0<<8 | 0xBF<<16, true, false
	case b >= 0xE1 && b <= 0xEC, b == 0xEE, b == 0xEF:
		return 2 | cont, true, false
	case b == 0xED:
		return 2 | 0x80<<8 | 0x9F<<16, true, false
	case b == 0xF0:
		return 3 | 0x90<<8 | 0xBF<<16, true, false
	case b >= 0xF1 && b <= 0xF3:
		return 3 | cont, true, false
	case b == 0xF4:
		return 3 | 0x80<<8 | 0x8F<<16, true, false
	}
	return 0, false, false
}

func (m *machine) stepNumber(h int32, f frame, b byte, out []int32) []int32 {
	integer := m.g.nodes[f.node].integer
	d := isDigit(b)
	switch f.st {
	case nMinus:
		switch {
		case b == '0':
			f.st = nZero
		case d:
			f.st, f.n = nInt, 1
		default:
			return out
		}
	case nZero, nInt, nFrac, nExp:
		switch {
		case d && f.st == nZero:
			return out // no leading zeros
		case d:
			limit := int32(maxIntDigits)
			switch f.st {
			case nFrac:
				limit = maxFracDigits
			case nExp:
				limit = maxExpDigits
			}
			if f.n >= limit {
				return out
			}
			f.n++
		case b == '.' && !integer && (f.st == nZero || f.st == nInt):
			f.st, f.n = nDot, 0
		case (b == 'e' || b == 'E') && !integer && f.st != nExp:
			f.st, f.n = nE, 0
		default:
			return m.pass(h, b, out)
		}
	case nDot:
		if !d {
			return out
		}
		f.st, f.n = nFrac, 1
	case nE:
		switch {
		case b == '+' || b == '-':
			f.st = nESign
		case d:
			f.st, f.n = nExp, 1
		default:
			return out
		}
	case nESign:
		if !d {
			return out
		}
		f.st, f.n = nExp, 1
	}
	return append(out, m.replace(h, f))
}

func (m *machine) stepRepeat(h int32, f frame, b byte, out []int32) []int32 {
	n := &m.g.nodes[f.node]
	switch f.st {
	case rAfter:
		if (n.max < 0 || f.n < n.max) && b == n.sep[0] {
			f.st, f.lo = rSep, 1
			if len(n.sep) == 1 {
				f.st, f.lo = rExpect, 0
			}
			return append(out, m.replace(h, f))
		}
		if f.n >= n.min {
			return m.pass(h, b, out)
		}
	case rSep:
		if b != n.sep[f.lo] {
			return out
		}
		f.lo++
		if int(f.lo) == len(n.sep) {
			f.st, f.lo = rExpect, 0
		}
		return append(out, m.replace(h, f))
	case rExpect:
		f.st = rIn
		return m.push(m.replace(h, f), n.kids[0], b, out)
	}
	return out
}

// finish reports whether the text may end at head h: every open value can end without another
// byte (a number, a complete literal, enough items of a repeat) down to a finished root. It
// appends to the arena; the caller truncates.
func (m *machine) finish(h int32) bool {
	for h >= 0 {
		f := m.arena[h].f
		n := &m.g.nodes[f.node]
		switch {
		case f.kind == kRoot:
			return f.st == rootDone
		case f.kind == kNumber && (f.st == nZero || f.st == nInt || f.st == nFrac || f.st == nExp),
			f.kind == kLiteral && int32(len(n.lits[f.lo])) == f.n,
			f.kind == kRepeat && f.st == rAfter && f.n >= n.min:
			h = m.complete(m.parent(h), -1)
		default:
			return false
		}
	}
	return false
}

// narrow returns the range of lits[lo:hi] (which share their first pos bytes) whose byte at pos
// is b. Sorted order puts a literal that ends at pos first and the rest in order of that byte.
func narrow(lits []string, lo, hi, pos int32, b byte) (int32, int32) {
	at := func(i int) int {
		s := lits[int(lo)+i]
		if int32(len(s)) <= pos {
			return -1
		}
		return int(s[pos])
	}
	k := int(hi - lo)
	first := sort.Search(k, func(i int) bool { return at(i) >= int(b) })
	last := first + sort.Search(k-first, func(i int) bool { return at(first+i) > int(b) })
	return lo + int32(first), lo + int32(last)
}

// narrowProps is narrow over the literals of object properties.
func narrowProps(props []prop, lo, hi, pos int32, b byte) (int32, int32) {
	at := func(i int) int {
		s := props[int(lo)+i].lit
		if int32(len(s)) <= pos {
			return -1
		}
		return int(s[pos])
	}
	k := int(hi - lo)
	first := sort.Search(k, func(i int) bool { return at(i) >= int(b) })
	last := first + sort.Search(k-first, func(i int) bool { return at(first+i) > int(b) })
	return lo + int32(first), lo + int32(last)
}
