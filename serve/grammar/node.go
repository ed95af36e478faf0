package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of a grammar. They bound the work a hostile schema can cause: compiling, the size of
// every frame, and the number of alternatives followed at once.
const (
	// MaxDepth bounds the nesting of the generated text (objects, arrays, tool-call wrappers).
	MaxDepth = 64
	// MaxWhitespace bounds a run of whitespace between JSON tokens (llama.cpp's JSON grammars
	// allow 20 too): enough for pretty-printed JSON, not enough for a model to stall in blanks.
	MaxWhitespace = 20
	// MaxNodes bounds the nodes of one grammar.
	MaxNodes = 20000
	// MaxProperties bounds the properties of one object schema (a frame records the ones
	// given in one 64-bit word).
	MaxProperties = 64
	// MaxLiterals bounds the values of one enum.
	MaxLiterals = 4096
	// maxHeads bounds the alternatives followed at once; beyond it the latest are dropped, which
	// keeps every output valid but may forbid some valid ones. Each head costs a step per trie
	// node and comparisons with the others, so the bound is also what a hostile anyOf can cost:
	// about 16 times a one-head mask.
	maxHeads = 16
	// pushCap bounds the heads one byte may open through nested anyOf before they are deduplicated.
	pushCap = 4 * maxHeads
	// Number bounds (see the package documentation).
	maxIntDigits  = 15
	maxFracDigits = 15
	maxExpDigits  = 2
)

// kind is what a node (and the frame that matches it) is.
type kind uint8

const (
	kAny     kind = iota // any JSON value
	kObject              // {...} with properties
	kArray               // [...]
	kString              // "..." with a length range
	kNumber              // a number, or an integer
	kLiteral             // one of a sorted list of byte strings (enum, const, booleans, null, raw text)
	kAnyOf               // one of several nodes
	kSeq                 // nodes one after the other (tool-call wrappers)
	kRepeat              // item (sep item)*, min to max times
	kKey                 // frames only: an object key matched against the property names
	kRoot                // frames only: the bottom of every stack
	kPending             // a $ref target still being compiled
)

// prop is one property of an object node.
type prop struct {
	name     string // decoded
	lit      string // as the recognizer accepts it: the JSON string, quotes included
	node     int32
	required bool
}

// node is one element of a grammar. Fields are used according to kind.
type node struct {
	kind kind
	// kObject: props sorted by lit; required has bit i for props[i]; addl is the node of other
	// properties, -1 when they are not allowed.
	props    []prop
	required uint64
	addl     int32
	// kArray
	items              int32
	minItems, maxItems int32 // maxItems -1: unbounded
	// kString
	minLen, maxLen int32 // maxLen -1: unbounded
	// kNumber
	integer bool
	// kLiteral: sorted, distinct, non-empty
	lits []string
	// kAnyOf (alternatives), kSeq (parts), kRepeat (kids[0] is the item)
	kids []int32
	// kRepeat
	sep      string
	min, max int32 // max -1: unbounded
}

// Grammar is a compiled grammar: immutable, safe for concurrent use by any number of Matchers.
type Grammar struct {
	nodes []node
	root  int32
	// first holds the bytes each node's texts begin with (see firstSets).
	first []byteSet
	// Shared nodes of free JSON: any value's object, array, string, number and literals, and
	// the key string of objects without declared properties.
	anyValue, anyObject, anyArray, anyString, anyNumber, anyLiteral, keyString int32
}

// Ref names a node of the grammar a Builder is making.
type Ref int32

// Builder makes a Grammar out of schemas and texts. Nodes are shared: a Ref may be used in
// several places, and cycles arise through $ref.
type Builder struct {
	g    Grammar
	err  error
	sat  []bool
	done bool
}

// NewBuilder returns a builder with the shared nodes of free JSON in place.
func NewBuilder() *Builder {
	b := &Builder{}
	g := &b.g
	g.anyObject = b.add(node{kind: kObject}) // addl set below, once kAny exists
	g.anyArray = b.add(node{kind: kArray, maxItems: -1})
	g.anyString = b.add(node{kind: kString, maxLen: -1})
	g.keyString = g.anyString
	g.anyNumber = b.add(node{kind: kNumber})
	g.anyLiteral = b.add(node{kind: kLiteral, lits: []string{"false", "null", "true"}})
	g.anyValue = b.add(node{kind: kAny})
	g.nodes[g.anyObject].addl = g.anyValue
	g.nodes[g.anyArray].items = g.anyValue
	return b
}

func (b *Builder) add(n node) int32 {
	if len(b.g.nodes) >= MaxNodes {
		if b.err == nil {
			b.err = fmt.Errorf("the grammar needs more than %d nodes", MaxNodes)
		}
		return 0
	}
	b.g.nodes = append(b.g.nodes, n)
	return int32(len(b.g.nodes) - 1)
}

// Any is any JSON value.
func (b *Builder) Any() Ref { return Ref(b.g.anyValue) }

// Text is the literal text s, byte for byte (not JSON). s must not be empty.
func (b *Builder) Text(s string) Ref {
	if s == "" {
		b.fail(errors.New("grammar: empty text"))
	}
	return Ref(b.add(node{kind: kLiteral, lits: []string{s}}))
}

// Seq is its parts one after the other.
func (b *Builder) Seq(parts ...Ref) Ref {
	if len(parts) == 0 {
		b.fail(errors.New("grammar: empty sequence"))
	}
	return Ref(b.add(node{kind: kSeq, kids: refs(parts)}))
}

// AnyOf is any one of alts.
func (b *Builder) AnyOf(alts ...Ref) Ref {
	return Ref(b.add(node{kind: kAnyOf, kids: refs(alts)}))
}

// Repeat is item, then (sep item) repeated: at least min (>= 1) and at most max (-1: no limit)
// items in all. sep must not be empty.
func (b *Builder) Repeat(item Ref, sep string, min, max int) Ref {
	if min < 1 || (max >= 0 && max < min) || sep == "" {
		b.fail(fmt.Errorf("grammar: repeat of %d to %d items with separator %q: expected 1 <= min <= max and a separator", min, max, sep))
	}
	return Ref(b.add(node{kind: kRepeat, kids: []int32{int32(item)}, sep: sep, min: int32(min), max: int32(max)}))
}

// Property is one property of an Object.
type Property struct {
	Name     string
	Value    Ref
	Required bool
}

// Object is a JSON object with the given properties (in any order, each at most once), and
// other properties only when additional is not nil (then their values match *additional).
func (b *Builder) Object(props []Property, additional *Ref) Ref {
	n := node{kind: kObject, addl: -1}
	if additional != nil {
		n.addl = int32(*additional)
	}
	if len(props) > MaxProperties {
		b.fail(fmt.Errorf("an object with %d properties: at most %d are supported", len(props), MaxProperties))
		return 0
	}
	seen := map[string]bool{}
	for _, p := range props {
		if seen[p.Name] {
			b.fail(fmt.Errorf("property %q is declared twice", p.Name))
			return 0
		}
		seen[p.Name] = true
		n.props = append(n.props, prop{name: p.Name, lit: quote(p.Name), node: int32(p.Value), required: p.Required})
	}
	slices.SortFunc(n.props, func(x, y prop) int { return strings.Compare(x.lit, y.lit) })
	for i, p := range n.props {
		if p.required {
			n.required |= 1 << i
		}
	}
	return Ref(b.add(n))
}

// Literal is one of the given JSON texts (enum and const values, already serialized).
func (b *Builder) Literal(texts ...string) Ref {
	lits := slices.Clone(texts)
	slices.Sort(lits)
	lits = slices.Compact(lits)
	if len(lits) > 0 && lits[0] == "" {
		b.fail(errors.New("grammar: empty literal"))
	}
	return Ref(b.add(node{kind: kLiteral, lits: lits}))
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func refs(rs []Ref) []int32 {
	out := make([]int32, len(rs))
	for i, r := range rs {
		out[i] = int32(r)
	}
	return out
}

// ErrUnsatisfiable is returned by Build when no text matches the grammar (an enum of no
// values, a required property that can never be written, minItems above maxItems, ...).
var ErrUnsatisfiable = errors.New("no value can satisfy the schema")

// Build finishes the grammar with root as its start. Parts that can never be completed are cut
// off (an optional property whose schema nothing satisfies is never offered), so that every
// prefix the recognizer accepts can be completed.
func (b *Builder) Build(root Ref) (*Grammar, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.done {
		return nil, errors.New("grammar: Build called twice")
	}
	b.done = true
	b.g.root = int32(root)
	if err := b.checkCycles(); err != nil {
		return nil, err
	}
	b.satisfiable()
	if !b.sat[root] {
		return nil, ErrUnsatisfiable
	}
	b.prune()
	b.mergeLiterals()
	b.firstSets()
	g := b.g
	return &g, nil
}

// checkCycles refuses a grammar in which a node can begin with itself without consuming a byte
// (anyOf or a sequence that leads back to itself through $ref): the recognizer would recurse
// without end. Recursion through an object or array is fine: each level consumes a bracket.
func (b *Builder) checkCycles() error {
	nodes := b.g.nodes
	const (
		unseen = iota
		open
		closed
	)
	state := make([]uint8, len(nodes))
	var visit func(i int32) error
	visit = func(i int32) error {
		switch state[i] {
		case open:
			return errors.New("the schema refers to itself without nesting (an anyOf or $ref cycle that never opens an object or array)")
		case closed:
			return nil
		}
		state[i] = open
		n := &nodes[i]
		var next []int32
		switch n.kind {
		case kPending:
			return errors.New("the schema has an unresolved $ref cycle")
		case kAnyOf:
			next = n.kids
		case kSeq, kRepeat:
			next = n.kids[:1]
		}
		for _, k := range next {
			if err := visit(k); err != nil {
				return err
			}
		}
		state[i] = closed
		return nil
	}
	for i := range nodes {
		if err := visit(int32(i)); err != nil {
			return err
		}
	}
	return nil
}

// satisfiable computes which nodes some finite text matches, as a least fixpoint: a node is
// satisfiable once the parts it needs are.
func (b *Builder) satisfiable() {
	nodes := b.g.nodes
	sat := make([]bool, len(nodes))
	for changed := true; changed; {
		changed = false
		for i := range nodes {
			if sat[i] {
				continue
			}
			if b.satNow(&nodes[i], sat) {
				sat[i], changed = true, true
			}
		}
	}
	b.sat = sat
}

func (b *Builder) satNow(n *node, sat []bool) bool {
	switch n.kind {
	case kAny, kNumber:
		return true
	case kString:
		return n.maxLen < 0 || n.minLen <= n.maxLen
	case kLiteral:
		return len(n.lits) > 0
	case kObject:
		for _, p := range n.props {
			if p.required && !sat[p.node] {
				return false
			}
		}
		return true
	case kArray:
		if n.maxItems >= 0 && n.minItems > n.maxItems {
			return false
		}
		return n.minItems == 0 || sat[n.items]
	case kAnyOf:
		return slices.ContainsFunc(n.kids, func(k int32) bool { return sat[k] })
	case kSeq:
		return !slices.ContainsFunc(n.kids, func(k int32) bool { return !sat[k] })
	case kRepeat:
		return sat[n.kids[0]]
	}
	return false
}

// prune removes what can never be completed: unsatisfiable alternatives, optional properties and
// additional properties whose schema nothing satisfies, and array items (then maxItems is 0).
func (b *Builder) prune() {
	sat := b.sat
	for i := range b.g.nodes {
		n := &b.g.nodes[i]
		switch n.kind {
		case kAnyOf:
			n.kids = slices.DeleteFunc(n.kids, func(k int32) bool { return !sat[k] })
		case kObject:
			if n.addl >= 0 && !sat[n.addl] {
				n.addl = -1
			}
			var kept []prop
			for _, p := range n.props {
				if sat[p.node] {
					kept = append(kept, p)
				}
			}
			if len(kept) != len(n.props) {
				n.props, n.required = kept, 0
				for j, p := range kept {
					if p.required {
						n.required |= 1 << j
					}
				}
			}
		case kArray:
			if !sat[n.items] {
				n.maxItems = 0
			}
		}
	}
}

// quote writes s as a JSON string the way encoding/json does without HTML escaping: the one
// spelling of a property name the recognizer accepts.
func quote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}
