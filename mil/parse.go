package mil

import (
	"fmt"
	"math"
	"strconv"
)

// Parser limits keep hostile input from costing much: text is bounded by the caller, these
// bound what one token can ask for.
const (
	maxRank      = 8
	maxTypeDepth = 4
)

// Parse parses MIL text as stored in a bundle or handed to the ANE compiler. It checks syntax
// only; Compile checks types, shapes and the ANE's rules.
func Parse(text []byte) (*Program, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	prog, err := p.program()
	if err != nil {
		return nil, err
	}
	return prog, nil
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) errf(t token, format string, args ...any) error {
	return &SyntaxError{t.pos, fmt.Sprintf(format, args...)}
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) expect(s string) (token, error) {
	t := p.next()
	if t.kind != tokPunct || t.text != s {
		return t, p.errf(t, "expected %q, found %s", s, t.describe())
	}
	return t, nil
}

func (p *parser) ident(what string) (token, error) {
	t := p.next()
	if t.kind != tokIdent {
		return t, p.errf(t, "expected %s, found %s", what, t.describe())
	}
	return t, nil
}

func (p *parser) keyword(k string) error {
	t := p.next()
	if t.kind != tokIdent || t.text != k {
		return p.errf(t, "expected %q, found %s", k, t.describe())
	}
	return nil
}

func (p *parser) program() (*Program, error) {
	prog := &Program{}
	if err := p.keyword("program"); err != nil {
		return nil, err
	}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	v := p.next()
	if v.kind != tokNumber {
		return nil, p.errf(v, "expected the program version, found %s", v.describe())
	}
	prog.Version, prog.VersionPos = v.text, v.pos
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	if p.isPunct("[") {
		attrs, err := p.attrs()
		if err != nil {
			return nil, err
		}
		prog.Attrs = attrs
	}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	for !p.isPunct("}") {
		f, err := p.function()
		if err != nil {
			return nil, err
		}
		prog.Funcs = append(prog.Funcs, f)
	}
	p.next()
	if t := p.next(); t.kind != tokEOF {
		return nil, p.errf(t, "unexpected %s after the program's closing brace", t.describe())
	}
	return prog, nil
}

func (p *parser) function() (*Func, error) {
	if err := p.keyword("func"); err != nil {
		return nil, err
	}
	name, err := p.ident("a function name")
	if err != nil {
		return nil, err
	}
	f := &Func{Name: name.text, Pos: name.pos}
	if _, err := p.expect("<"); err != nil {
		return nil, err
	}
	opset, err := p.ident("an opset such as ios18")
	if err != nil {
		return nil, err
	}
	f.Opset = opset.text
	if _, err := p.expect(">"); err != nil {
		return nil, err
	}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	for !p.isPunct(")") {
		if len(f.Params) > 0 {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
		start := p.peek()
		typ, err := p.typ(0)
		if err != nil {
			return nil, err
		}
		n, err := p.ident("a parameter name")
		if err != nil {
			return nil, err
		}
		if typ.Kind != KindTensor {
			return nil, p.errf(start, "parameter %s must be a tensor", n.text)
		}
		f.Params = append(f.Params, Param{Name: n.text, Type: typ, Pos: n.pos})
	}
	p.next()
	if p.isPunct("[") {
		if f.Attrs, err = p.attrs(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	for !p.isPunct("}") {
		if p.peek().kind == tokEOF {
			return nil, p.errf(p.peek(), "function %s is not closed", f.Name)
		}
		s, err := p.stmt()
		if err != nil {
			return nil, err
		}
		f.Stmts = append(f.Stmts, s)
	}
	p.next()
	if _, err := p.expect("->"); err != nil {
		return nil, err
	}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	for !p.isPunct(")") {
		if len(f.Outputs) > 0 {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
		o, err := p.ident("an output variable")
		if err != nil {
			return nil, err
		}
		f.Outputs = append(f.Outputs, Ref{o.text, o.pos})
	}
	p.next()
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *parser) stmt() (*Stmt, error) {
	start := p.peek()
	typ, err := p.typ(0)
	if err != nil {
		return nil, err
	}
	v, err := p.ident("a variable name")
	if err != nil {
		return nil, err
	}
	if p.isPunct(",") {
		return nil, p.errf(p.peek(), "statements with several results are not supported")
	}
	if _, err := p.expect("="); err != nil {
		return nil, err
	}
	op, err := p.ident("an op name")
	if err != nil {
		return nil, err
	}
	s := &Stmt{Pos: start.pos, Type: typ, Var: v.text, Op: op.text}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	for !p.isPunct(")") {
		if len(s.Args) > 0 {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		s.Args = append(s.Args, a)
	}
	p.next()
	if p.isPunct("[") {
		if s.Attrs, err = p.attrs(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(";"); err != nil {
		return nil, err
	}
	return s, nil
}

func (p *parser) arg() (Arg, error) {
	n, err := p.ident("an argument name")
	if err != nil {
		return Arg{}, err
	}
	a := Arg{Name: n.text, Pos: n.pos}
	if _, err := p.expect("="); err != nil {
		return a, err
	}
	switch t := p.peek(); {
	case t.kind == tokPunct && t.text == "(":
		p.next()
		a.Tuple = true
		for !p.isPunct(")") {
			if len(a.Refs) > 0 {
				if _, err := p.expect(","); err != nil {
					return a, err
				}
			}
			r, err := p.ident("a variable in the tuple")
			if err != nil {
				return a, err
			}
			a.Refs = append(a.Refs, Ref{r.text, r.pos})
		}
		p.next()
	case p.startsLiteral():
		lit, err := p.literal()
		if err != nil {
			return a, err
		}
		a.Lit = lit
	case t.kind == tokIdent:
		p.next()
		a.Refs = []Ref{{t.text, t.pos}}
	default:
		return a, p.errf(t, "expected a variable, a tuple or a literal for argument %s, found %s", a.Name, t.describe())
	}
	return a, nil
}

// startsLiteral reports whether the next tokens are a typed literal: a type name followed by
// '(' or '<'.
func (p *parser) startsLiteral() bool {
	t := p.peek()
	if t.kind != tokIdent {
		return false
	}
	n := p.peekAt(1)
	if n.kind != tokPunct {
		return false
	}
	if t.text == "tensor" || t.text == "dict" {
		return n.text == "<"
	}
	_, ok := dtypeNames[t.text]
	return ok && n.text == "("
}

func (p *parser) attrs() ([]Attr, error) {
	if _, err := p.expect("["); err != nil {
		return nil, err
	}
	var out []Attr
	for !p.isPunct("]") {
		if len(out) > 0 {
			if _, err := p.expect(","); err != nil {
				return nil, err
			}
		}
		n, err := p.ident("an attribute name")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect("="); err != nil {
			return nil, err
		}
		if !p.startsLiteral() {
			return nil, p.errf(p.peek(), "attribute %s: expected a typed literal, found %s", n.text, p.peek().describe())
		}
		lit, err := p.literal()
		if err != nil {
			return nil, err
		}
		out = append(out, Attr{Name: n.text, Pos: n.pos, Val: lit})
	}
	p.next()
	return out, nil
}

// typ parses `fp16`, `tensor<fp16, [1, 2]>` or `dict<K, V>`.
func (p *parser) typ(depth int) (Type, error) {
	t, err := p.ident("a type")
	if err != nil {
		return Type{}, err
	}
	if depth > maxTypeDepth {
		return Type{}, p.errf(t, "type nested too deeply")
	}
	switch t.text {
	case "tensor":
		if _, err := p.expect("<"); err != nil {
			return Type{}, err
		}
		d, err := p.ident("an element type")
		if err != nil {
			return Type{}, err
		}
		dt, ok := dtypeNames[d.text]
		if !ok {
			return Type{}, p.errf(d, "unknown element type %q", d.text)
		}
		if _, err := p.expect(","); err != nil {
			return Type{}, err
		}
		if _, err := p.expect("["); err != nil {
			return Type{}, err
		}
		shape := []int{}
		for !p.isPunct("]") {
			if len(shape) > 0 {
				if _, err := p.expect(","); err != nil {
					return Type{}, err
				}
			}
			n := p.next()
			if n.kind != tokNumber {
				return Type{}, p.errf(n, "expected a dimension, found %s (symbolic shapes are not supported)", n.describe())
			}
			v, err := strconv.ParseInt(n.text, 10, 64)
			if err != nil || v < 0 || v > math.MaxInt32 {
				return Type{}, p.errf(n, "dimension %s is not an integer between 0 and 2^31-1", n.text)
			}
			if len(shape) == maxRank {
				return Type{}, p.errf(n, "rank above %d", maxRank)
			}
			shape = append(shape, int(v))
		}
		p.next()
		if _, err := p.expect(">"); err != nil {
			return Type{}, err
		}
		if len(shape) == 0 {
			shape = nil
		}
		return Type{Kind: KindTensor, DType: dt, Shape: shape}, nil
	case "dict":
		if _, err := p.expect("<"); err != nil {
			return Type{}, err
		}
		k, err := p.typ(depth + 1)
		if err != nil {
			return Type{}, err
		}
		if _, err := p.expect(","); err != nil {
			return Type{}, err
		}
		v, err := p.typ(depth + 1)
		if err != nil {
			return Type{}, err
		}
		if _, err := p.expect(">"); err != nil {
			return Type{}, err
		}
		return Type{Kind: KindDict, Key: &k, Elem: &v}, nil
	}
	dt, ok := dtypeNames[t.text]
	if !ok {
		return Type{}, p.errf(t, "unknown type %q", t.text)
	}
	return Type{Kind: KindTensor, DType: dt}, nil
}

// literal parses `<type>(<body>)`.
func (p *parser) literal() (*Literal, error) {
	start := p.peek()
	typ, err := p.typ(0)
	if err != nil {
		return nil, err
	}
	lit := &Literal{Type: typ, Pos: start.pos}
	if _, err := p.expect("("); err != nil {
		return nil, err
	}
	switch {
	case typ.Kind == KindDict:
		if err := p.dictBody(lit); err != nil {
			return nil, err
		}
	case p.peek().kind == tokIdent && p.peek().text == "BLOBFILE":
		if typ.Rank() == 0 {
			return nil, p.errf(p.peek(), "BLOBFILE needs a tensor type, not %s", typ)
		}
		if err := p.blobfile(lit); err != nil {
			return nil, err
		}
	case p.isPunct("["):
		p.next()
		for !p.isPunct("]") {
			if len(lit.Ints)+len(lit.Nums) > 0 || lit.Str != "" {
				if _, err := p.expect(","); err != nil {
					return nil, err
				}
			}
			if err := p.scalar(lit); err != nil {
				return nil, err
			}
		}
		p.next()
		if n := len(lit.Ints) + len(lit.Nums); n != typ.Elements() || typ.Rank() == 0 {
			return nil, p.errf(start, "%s literal has %d values; its type holds %d", typ, n, typ.Elements())
		}
	default:
		if typ.Rank() != 0 {
			return nil, p.errf(p.peek(), "%s literal needs [values] or BLOBFILE(...)", typ)
		}
		if err := p.scalar(lit); err != nil {
			return nil, err
		}
	}
	if _, err := p.expect(")"); err != nil {
		return nil, err
	}
	return lit, nil
}

// scalar appends one value of the literal's element type.
func (p *parser) scalar(lit *Literal) error {
	dt := lit.Type.DType
	t := p.next()
	switch {
	case dt == String:
		if t.kind != tokString {
			return p.errf(t, "expected a string, found %s", t.describe())
		}
		if lit.Type.Rank() != 0 {
			return p.errf(t, "string tensors are not supported")
		}
		lit.Str = t.text
		return nil
	case dt == Bool:
		switch t.text {
		case "true":
			lit.Ints = append(lit.Ints, 1)
		case "false":
			lit.Ints = append(lit.Ints, 0)
		default:
			return p.errf(t, "expected true or false, found %s", t.describe())
		}
		return nil
	}
	neg := false
	if t.kind == tokPunct && t.text == "-" {
		neg = true
		t = p.next()
	}
	if dt.IsFloat() {
		var f float64
		switch {
		case t.kind == tokIdent && t.text == "inf":
			f = math.Inf(1)
		case t.kind == tokIdent && t.text == "nan":
			f = math.NaN()
		case t.kind == tokNumber:
			v, err := strconv.ParseFloat(t.text, 64)
			if err != nil {
				iv, ierr := strconv.ParseInt(t.text, 0, 64)
				if ierr != nil {
					return p.errf(t, "bad %s value %q", dt, t.text)
				}
				v = float64(iv)
			}
			f = v
		default:
			return p.errf(t, "expected a number, found %s", t.describe())
		}
		if neg {
			f = -f
		}
		lit.Nums = append(lit.Nums, f)
		return nil
	}
	if t.kind != tokNumber {
		return p.errf(t, "expected an integer, found %s", t.describe())
	}
	v, err := strconv.ParseInt(t.text, 0, 64)
	if err != nil {
		return p.errf(t, "bad %s value %q", dt, t.text)
	}
	if neg {
		v = -v
	}
	if !intFits(dt, v) {
		return p.errf(t, "%d does not fit in %s", v, dt)
	}
	lit.Ints = append(lit.Ints, v)
	return nil
}

// intFits reports whether v is in range for the integer type dt.
func intFits(dt DType, v int64) bool {
	bits := dt.Bits()
	switch dt {
	case Int4, Int8, Int16, Int32:
		return v >= -(1<<(bits-1)) && v < 1<<(bits-1)
	case Int64:
		return true
	case UInt64:
		return v >= 0
	}
	return v >= 0 && v < 1<<bits
}

func (p *parser) blobfile(lit *Literal) error {
	p.next() // BLOBFILE
	if _, err := p.expect("("); err != nil {
		return err
	}
	ref := &BlobRef{}
	seen := map[string]bool{}
	for !p.isPunct(")") {
		if len(seen) > 0 {
			if _, err := p.expect(","); err != nil {
				return err
			}
		}
		n, err := p.ident("path or offset")
		if err != nil {
			return err
		}
		if _, err := p.expect("="); err != nil {
			return err
		}
		if !p.startsLiteral() {
			return p.errf(p.peek(), "BLOBFILE %s: expected a typed literal, found %s", n.text, p.peek().describe())
		}
		v, err := p.literal()
		if err != nil {
			return err
		}
		switch n.text {
		case "path":
			if v.Type.DType != String || v.Type.Rank() != 0 {
				return p.errf(n, "BLOBFILE path must be a string, not %s", v.Type)
			}
			ref.Path = v.Str
		case "offset":
			if v.Type.DType != UInt64 || v.Type.Rank() != 0 {
				return p.errf(n, "BLOBFILE offset must be a uint64, not %s", v.Type)
			}
			ref.Offset = uint64(v.Ints[0])
		default:
			return p.errf(n, "unknown BLOBFILE field %q; expected path and offset", n.text)
		}
		if seen[n.text] {
			return p.errf(n, "BLOBFILE %s given twice", n.text)
		}
		seen[n.text] = true
	}
	p.next()
	if !seen["path"] || !seen["offset"] {
		return p.errf(p.peek(), "BLOBFILE needs both path and offset")
	}
	lit.Blob = ref
	return nil
}

// dictBody parses `{{"k", "v"}, ...}` where keys and values are bare or typed strings.
func (p *parser) dictBody(lit *Literal) error {
	if _, err := p.expect("{"); err != nil {
		return err
	}
	for !p.isPunct("}") {
		if len(lit.Dict) > 0 {
			if _, err := p.expect(","); err != nil {
				return err
			}
		}
		if _, err := p.expect("{"); err != nil {
			return err
		}
		var kv [2]string
		for k := 0; k < 2; k++ {
			if k == 1 {
				if _, err := p.expect(","); err != nil {
					return err
				}
			}
			s, err := p.dictString()
			if err != nil {
				return err
			}
			kv[k] = s
		}
		if _, err := p.expect("}"); err != nil {
			return err
		}
		lit.Dict = append(lit.Dict, kv)
	}
	p.next()
	return nil
}

func (p *parser) dictString() (string, error) {
	if p.peek().kind == tokString {
		return p.next().text, nil
	}
	if p.startsLiteral() {
		v, err := p.literal()
		if err != nil {
			return "", err
		}
		if v.Type.DType != String {
			return "", p.errf(p.peek(), "dict entries must be strings, not %s", v.Type)
		}
		return v.Str, nil
	}
	return "", p.errf(p.peek(), "expected a string, found %s", p.peek().describe())
}
