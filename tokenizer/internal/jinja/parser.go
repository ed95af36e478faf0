package jinja

import "strings"

// The parser is a transcription of jinja2.parser.Parser for the supported statements.

type parser struct {
	toks []token
	i    int
	tags []string // open block tags, for error messages
	// nest is how deeply the node being parsed nests: open blocks, brackets and calls, unary
	// operators, and the links of left-associative chains (a + b + c nests two deep). Bounding
	// it bounds the parser's recursion and every recursive walk over the tree.
	nest int
}

// maxNest bounds nest. jinja2 itself fails much earlier: Python's recursion limit stops its
// parser at about a hundred nested brackets.
const maxNest = 256

// enter opens one more level of nesting.
func (p *parser) enter() error {
	p.nest++
	if p.nest > maxNest {
		return p.fail("the template nests more than %d levels deep", maxNest)
	}
	return nil
}

// restore ends the levels a function opened; call it deferred with the level at its start.
func (p *parser) restore(n int) { p.nest = n }

func parse(src string) ([]stmt, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	if p.cur().kind != tEOF {
		return nil, p.fail("unexpected %s", p.cur())
	}
	return body, nil
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) look() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) fail(format string, args ...any) error {
	return syntaxError(p.cur().line, format, args...)
}

func (p *parser) isName(v string) bool { t := p.cur(); return t.kind == tName && t.val == v }
func (p *parser) isOp(v string) bool   { t := p.cur(); return t.kind == tOp && t.val == v }

func (p *parser) skipName(v string) bool {
	if p.isName(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(v string) error {
	if !p.skipOp(v) {
		return p.fail("expected token '%s', got '%s'", v, p.cur())
	}
	return nil
}

func (p *parser) expectKind(k tokKind, what string) (token, error) {
	if p.cur().kind != k {
		return token{}, p.fail("expected %s, got '%s'", what, p.cur())
	}
	return p.next(), nil
}

func (p *parser) expectName() (string, error) {
	t, err := p.expectKind(tName, "name")
	return t.val, err
}

// subparse parses template data, prints and statements until a block whose first name is one
// of end (left as the current token, after the block_begin).
func (p *parser) subparse(end []string) ([]stmt, error) {
	var body []stmt
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			if end != nil {
				return nil, p.fail("Unexpected end of template. Jinja was looking for the following tags: %s. The innermost block that needs to be closed is '%s'.",
					"'"+strings.Join(end, "' or '")+"'", p.tags[len(p.tags)-1])
			}
			return body, nil
		case tData:
			p.next()
			body = append(body, &dataStmt{t.val})
		case tVarBegin:
			p.next()
			x, err := p.parseTuple(true, nil, false)
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKind(tVarEnd, "end of print statement"); err != nil {
				return nil, err
			}
			body = append(body, &outputStmt{x})
		case tBlockBegin:
			p.next()
			if end != nil && p.cur().kind == tName {
				for _, e := range end {
					if p.cur().val == e {
						return body, nil
					}
				}
			}
			s, err := p.parseStatement()
			if err != nil {
				return nil, err
			}
			if s != nil {
				body = append(body, s)
			}
			if _, err := p.expectKind(tBlockEnd, "end of statement block"); err != nil {
				return nil, err
			}
		default:
			return nil, p.fail("unexpected '%s'", t)
		}
	}
}

// statements parses a body up to one of end; the end name stays current unless drop is set.
func (p *parser) statements(end []string, drop bool) ([]stmt, error) {
	p.skipOp(":")
	if _, err := p.expectKind(tBlockEnd, "end of statement block"); err != nil {
		return nil, err
	}
	body, err := p.subparse(end)
	if err != nil {
		return nil, err
	}
	if drop {
		p.next()
	}
	return body, nil
}

func (p *parser) parseStatement() (stmt, error) {
	defer p.restore(p.nest)
	if err := p.enter(); err != nil {
		return nil, err
	}
	t := p.cur()
	if t.kind != tName {
		return nil, p.fail("tag name expected")
	}
	p.tags = append(p.tags, t.val)
	defer func() { p.tags = p.tags[:len(p.tags)-1] }()
	switch t.val {
	case "for":
		return p.parseFor()
	case "if":
		return p.parseIf()
	case "set":
		return p.parseSet()
	case "macro":
		return p.parseMacro()
	case "with":
		return p.parseWith()
	case "filter":
		p.next()
		f, err := p.parseFilter(nil, true)
		if err != nil {
			return nil, err
		}
		body, err := p.statements([]string{"endfilter"}, true)
		if err != nil {
			return nil, err
		}
		return &filterBlockStmt{pos{t.line}, f.(*filterExpr), body}, nil
	case "print":
		p.next()
		var items []expr
		for p.cur().kind != tBlockEnd {
			if len(items) > 0 {
				if err := p.expectOp(","); err != nil {
					return nil, err
				}
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			items = append(items, x)
		}
		// {% print a, b %} outputs each expression in turn.
		out := make([]stmt, len(items))
		for i, x := range items {
			out[i] = &outputStmt{x}
		}
		return &withStmt{pos: pos{t.line}, body: out}, nil
	case "break":
		p.next()
		return &breakStmt{pos{t.line}}, nil
	case "continue":
		p.next()
		return &continueStmt{pos{t.line}}, nil
	case "generation":
		// transformers' AssistantTracker: renders its body unchanged.
		p.next()
		body, err := p.statements([]string{"endgeneration"}, true)
		if err != nil {
			return nil, err
		}
		return &withStmt{pos: pos{t.line}, body: body}, nil
	case "block", "extends", "include", "import", "from", "call", "autoescape":
		return nil, p.fail("the '%s' tag is not supported in chat templates", t.val)
	}
	return nil, p.fail("Encountered unknown tag '%s'.", t.val)
}

func (p *parser) parseFor() (stmt, error) {
	ln := p.next().line
	target, err := p.parseAssignTarget(true, false, []string{"in"}, false)
	if err != nil {
		return nil, err
	}
	if !p.skipName("in") {
		return nil, p.fail("expected 'in', got '%s'", p.cur())
	}
	iter, err := p.parseTuple(false, []string{"recursive"}, false)
	if err != nil {
		return nil, err
	}
	var test expr
	if p.skipName("if") {
		if test, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.fail("recursive for loops are not supported")
	}
	body, err := p.statements([]string{"endfor", "else"}, false)
	if err != nil {
		return nil, err
	}
	var els []stmt
	if p.next().val == "else" {
		if els, err = p.statements([]string{"endfor"}, true); err != nil {
			return nil, err
		}
	}
	return &forStmt{pos{ln}, target, iter, body, els, test, definesMacro(body)}, nil
}

func (p *parser) parseIf() (stmt, error) {
	s := &ifStmt{pos: pos{p.next().line}}
	for {
		test, err := p.parseTuple(false, nil, false)
		if err != nil {
			return nil, err
		}
		body, err := p.statements([]string{"elif", "else", "endif"}, false)
		if err != nil {
			return nil, err
		}
		s.tests = append(s.tests, test)
		s.bodies = append(s.bodies, body)
		t := p.next()
		if t.val == "elif" {
			continue
		}
		if t.val == "else" {
			if s.els, err = p.statements([]string{"endif"}, true); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
}

func (p *parser) parseSet() (stmt, error) {
	ln := p.next().line
	target, err := p.parseAssignTarget(true, false, nil, true)
	if err != nil {
		return nil, err
	}
	if p.skipOp("=") {
		x, err := p.parseTuple(true, nil, false)
		if err != nil {
			return nil, err
		}
		return &setStmt{pos{ln}, target, x}, nil
	}
	var f *filterExpr
	if p.isOp("|") {
		fx, err := p.parseFilter(nil, false)
		if err != nil {
			return nil, err
		}
		f = fx.(*filterExpr)
	}
	body, err := p.statements([]string{"endset"}, true)
	if err != nil {
		return nil, err
	}
	return &setBlockStmt{pos{ln}, target, f, body}, nil
}

func (p *parser) parseMacro() (stmt, error) {
	ln := p.next().line
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	m := &macroStmt{pos: pos{ln}, name: name}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for !p.isOp(")") {
		if len(m.args) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		arg, err := p.expectName()
		if err != nil {
			return nil, err
		}
		if p.skipOp("=") {
			d, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			m.defaults = append(m.defaults, d)
		} else if len(m.defaults) > 0 {
			return nil, p.fail("non-default argument follows default argument")
		}
		m.args = append(m.args, arg)
	}
	p.next()
	if m.body, err = p.statements([]string{"endmacro"}, true); err != nil {
		return nil, err
	}
	return m, nil
}

func (p *parser) parseWith() (stmt, error) {
	s := &withStmt{pos: pos{p.next().line}}
	for p.cur().kind != tBlockEnd {
		if len(s.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		t, err := p.parseAssignTarget(true, false, nil, false)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		s.targets = append(s.targets, t)
		s.values = append(s.values, v)
	}
	body, err := p.statements([]string{"endwith"}, true)
	if err != nil {
		return nil, err
	}
	s.body = body
	return s, nil
}

// parseAssignTarget parses a name, a tuple of names, or (withNamespace) ns.attr.
func (p *parser) parseAssignTarget(withTuple, nameOnly bool, extraEnd []string, withNamespace bool) (expr, error) {
	var target expr
	var err error
	if nameOnly {
		t, err := p.expectKind(tName, "name")
		if err != nil {
			return nil, err
		}
		return &nameExpr{pos{t.line}, t.val}, nil
	}
	if withTuple {
		target, err = p.parseTupleSimplified(extraEnd, withNamespace)
	} else {
		target, err = p.parsePrimary(withNamespace)
	}
	if err != nil {
		return nil, err
	}
	if !canAssign(target) {
		return nil, p.fail("can't assign to %T", target)
	}
	return target, nil
}

func canAssign(x expr) bool {
	switch t := x.(type) {
	case *nameExpr:
		switch t.name {
		case "true", "false", "none", "True", "False", "None":
			return false
		}
		return true
	case *nsRef:
		return true
	case *tupleExpr:
		for _, it := range t.items {
			if !canAssign(it) {
				return false
			}
		}
		return true
	}
	return false
}

func (p *parser) isTupleEnd(extraEnd []string) bool {
	switch p.cur().kind {
	case tVarEnd, tBlockEnd:
		return true
	}
	if p.isOp(")") {
		return true
	}
	for _, e := range extraEnd {
		if p.isName(e) {
			return true
		}
	}
	return false
}

// parseTupleSimplified is parse_tuple(simplified=True): names and literals only.
func (p *parser) parseTupleSimplified(extraEnd []string, withNamespace bool) (expr, error) {
	ln := p.cur().line
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		x, err := p.parsePrimary(withNamespace)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		return nil, p.fail("Expected an expression, got '%s'", p.cur())
	}
	return &tupleExpr{pos{ln}, items}, nil
}

// parseTuple is parse_tuple: expressions separated by commas make a tuple.
func (p *parser) parseTuple(withCond bool, extraEnd []string, explicitParens bool) (expr, error) {
	ln := p.cur().line
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		x, err := p.parseExpression(withCond)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.fail("Expected an expression, got '%s'", p.cur())
		}
	}
	return &tupleExpr{pos{ln}, items}, nil
}

func (p *parser) parseExpression(withCond bool) (expr, error) {
	defer p.restore(p.nest)
	if err := p.enter(); err != nil {
		return nil, err
	}
	if withCond {
		return p.parseCondExpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondExpr() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.skipName("if") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		test, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.skipName("else") {
			if els, err = p.parseCondExpr(); err != nil {
				return nil, err
			}
		}
		x = &condExpr{pos{ln}, test, x, els}
		ln = p.cur().line
	}
	return x, nil
}

func (p *parser) parseOr() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.skipName("or") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{ln}, "or", l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.skipName("and") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{ln}, "and", l, r}
	}
	return l, nil
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		defer p.restore(p.nest)
		if err := p.enter(); err != nil {
			return nil, err
		}
		ln := p.next().line
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{pos{ln}, "not", x}, nil
	}
	return p.parseCompare()
}

var compareOps = map[string]string{"==": "eq", "!=": "ne", "<": "lt", "<=": "lteq", ">": "gt", ">=": "gteq"}

func (p *parser) parseCompare() (expr, error) {
	ln := p.cur().line
	x, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{pos: pos{ln}, first: x}
	for {
		var op string
		switch {
		case p.cur().kind == tOp && compareOps[p.cur().val] != "":
			op = compareOps[p.next().val]
		case p.skipName("in"):
			op = "in"
		case p.isName("not") && p.look().kind == tName && p.look().val == "in":
			p.next()
			p.next()
			op = "notin"
		default:
			if len(c.ops) == 0 {
				return x, nil
			}
			return c, nil
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
}

func (p *parser) parseMath1() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		op := p.next().val
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{ln}, op, l, r}
	}
	return l, nil
}

func (p *parser) parseConcat() (expr, error) {
	ln := p.cur().line
	x, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	parts := []expr{x}
	for p.skipOp("~") {
		y, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		parts = append(parts, y)
	}
	if len(parts) == 1 {
		return x, nil
	}
	return &concatExpr{pos{ln}, parts}, nil
}

func (p *parser) parseMath2() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		op := p.next().val
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{ln}, op, l, r}
	}
	return l, nil
}

func (p *parser) parsePow() (expr, error) {
	defer p.restore(p.nest)
	ln := p.cur().line
	l, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.skipOp("**") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{ln}, "**", l, r}
	}
	return l, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	ln := p.cur().line
	var x expr
	var err error
	switch {
	case p.isOp("-") || p.isOp("+"):
		defer p.restore(p.nest)
		if err := p.enter(); err != nil {
			return nil, err
		}
		op := p.next().val
		y, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		x = &unaryExpr{pos{ln}, op, y}
	default:
		if x, err = p.parsePrimary(false); err != nil {
			return nil, err
		}
	}
	if x, err = p.parsePostfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(x)
	}
	return x, nil
}

func (p *parser) parsePrimary(withNamespace bool) (expr, error) {
	t := p.cur()
	ln := pos{t.line}
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{ln, true}, nil
		case "false", "False":
			return &constExpr{ln, false}, nil
		case "none", "None":
			return &constExpr{ln, nil}, nil
		}
		if withNamespace && p.isOp(".") {
			p.next()
			attr, err := p.expectName()
			if err != nil {
				return nil, err
			}
			return &nsRef{ln, t.val, attr}, nil
		}
		return &nameExpr{ln, t.val}, nil
	case tString:
		p.next()
		s := t.val
		for p.cur().kind == tString {
			s += p.next().val
		}
		return &constExpr{ln, s}, nil
	case tInt:
		p.next()
		return &constExpr{ln, t.ival}, nil
	case tFloat:
		p.next()
		return &constExpr{ln, t.fval}, nil
	case tOp:
		switch t.val {
		case "(":
			p.next()
			x, err := p.parseTuple(true, nil, true)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			l := &listExpr{pos: ln}
			for !p.isOp("]") {
				if len(l.items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
				}
				if p.isOp("]") {
					break
				}
				x, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, x)
			}
			p.next()
			return l, nil
		case "{":
			p.next()
			d := &dictExpr{pos: ln}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
				}
				if p.isOp("}") {
					break
				}
				k, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpression(true)
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
			}
			p.next()
			return d, nil
		}
	}
	return nil, p.fail("unexpected '%s'", t)
}

func (p *parser) parsePostfix(x expr) (expr, error) {
	defer p.restore(p.nest)
	for {
		if err := p.enter(); err != nil {
			return nil, err
		}
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			x, err = p.parseSubscript(x)
		case p.isOp("("):
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseFilterExpr(x expr) (expr, error) {
	defer p.restore(p.nest)
	for {
		if err := p.enter(); err != nil {
			return nil, err
		}
		var err error
		switch {
		case p.isOp("|"):
			x, err = p.parseFilter(x, false)
		case p.isName("is"):
			x, err = p.parseTest(x)
		case p.isOp("("):
			x, err = p.parseCall(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseSubscript(x expr) (expr, error) {
	t := p.next()
	ln := pos{t.line}
	if t.val == "." {
		a := p.next()
		switch a.kind {
		case tName:
			return &getattrExpr{ln, x, a.val}, nil
		case tInt:
			return &getitemExpr{ln, x, &constExpr{ln, a.ival}}, nil
		}
		return nil, syntaxError(a.line, "expected name or number")
	}
	var args []expr
	for !p.isOp("]") {
		if len(args) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		a, err := p.parseSubscribed()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	p.next()
	if len(args) == 1 {
		return &getitemExpr{ln, x, args[0]}, nil
	}
	return &getitemExpr{ln, x, &tupleExpr{ln, args}}, nil
}

func (p *parser) parseSubscribed() (expr, error) {
	ln := pos{p.cur().line}
	var args []expr
	if p.skipOp(":") {
		args = []expr{nil}
	} else {
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !p.skipOp(":") {
			return x, nil
		}
		args = []expr{x}
	}
	switch {
	case p.isOp(":"):
		args = append(args, nil)
	case !p.isOp("]") && !p.isOp(","):
		x, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		args = append(args, x)
	default:
		args = append(args, nil)
	}
	if p.skipOp(":") {
		if !p.isOp("]") && !p.isOp(",") {
			x, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			args = append(args, x)
		} else {
			args = append(args, nil)
		}
	} else {
		args = append(args, nil)
	}
	return &sliceExpr{ln, args[0], args[1], args[2]}, nil
}

func (p *parser) parseCallArgs() (callArgs, error) {
	var c callArgs
	if err := p.expectOp("("); err != nil {
		return c, err
	}
	requireComma := false
	for !p.isOp(")") {
		if requireComma {
			if err := p.expectOp(","); err != nil {
				return c, err
			}
			if p.isOp(")") {
				break
			}
		}
		bad := func() error { return p.fail("invalid syntax for function call expression") }
		switch {
		case p.isOp("*"):
			if c.dynArgs != nil || c.dynKwargs != nil {
				return c, bad()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynArgs = x
		case p.isOp("**"):
			if c.dynKwargs != nil {
				return c, bad()
			}
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.dynKwargs = x
		case p.cur().kind == tName && p.look().kind == tOp && p.look().val == "=":
			if c.dynKwargs != nil {
				return c, bad()
			}
			name := p.next().val
			p.next()
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.kwNames = append(c.kwNames, name)
			c.kwVals = append(c.kwVals, x)
		default:
			if c.dynArgs != nil || c.dynKwargs != nil || len(c.kwNames) > 0 {
				return c, bad()
			}
			x, err := p.parseExpression(true)
			if err != nil {
				return c, err
			}
			c.args = append(c.args, x)
		}
		requireComma = true
	}
	p.next()
	return c, nil
}

func (p *parser) parseCall(x expr) (expr, error) {
	ln := p.cur().line
	c, err := p.parseCallArgs()
	if err != nil {
		return nil, err
	}
	return &callExpr{pos{ln}, x, c}, nil
}

func (p *parser) parseFilter(x expr, startInline bool) (expr, error) {
	defer p.restore(p.nest)
	for p.isOp("|") || startInline {
		if err := p.enter(); err != nil {
			return nil, err
		}
		if !startInline {
			p.next()
		}
		t, err := p.expectKind(tName, "filter name")
		if err != nil {
			return nil, err
		}
		name := t.val
		for p.skipOp(".") {
			n, err := p.expectName()
			if err != nil {
				return nil, err
			}
			name += "." + n
		}
		if _, ok := filters[name]; !ok {
			return nil, syntaxError(t.line, "No filter named '%s'.", name)
		}
		var c callArgs
		if p.isOp("(") {
			if c, err = p.parseCallArgs(); err != nil {
				return nil, err
			}
		}
		x = &filterExpr{pos{t.line}, x, name, c}
		startInline = false
	}
	return x, nil
}

func (p *parser) parseTest(x expr) (expr, error) {
	ln := p.next().line
	negated := p.skipName("not")
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	for p.skipOp(".") {
		n, err := p.expectName()
		if err != nil {
			return nil, err
		}
		name += "." + n
	}
	if _, ok := tests[name]; !ok {
		return nil, syntaxError(ln, "No test named '%s'.", name)
	}
	var c callArgs
	t := p.cur()
	switch {
	case p.isOp("("):
		if c, err = p.parseCallArgs(); err != nil {
			return nil, err
		}
	case (t.kind == tName || t.kind == tString || t.kind == tInt || t.kind == tFloat ||
		(t.kind == tOp && (t.val == "(" || t.val == "[" || t.val == "{"))) &&
		!(t.kind == tName && (t.val == "else" || t.val == "or" || t.val == "and")):
		if p.isName("is") {
			return nil, p.fail("You cannot chain multiple tests with is")
		}
		a, err := p.parsePrimary(false)
		if err != nil {
			return nil, err
		}
		if a, err = p.parsePostfix(a); err != nil {
			return nil, err
		}
		c.args = []expr{a}
	}
	var out expr = &testExpr{pos{ln}, x, name, c}
	if negated {
		out = &unaryExpr{pos{ln}, "not", out}
	}
	return out, nil
}
