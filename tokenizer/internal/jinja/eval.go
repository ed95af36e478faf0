package jinja

import (
	"errors"
	"fmt"
	"time"
)

// Template is a parsed chat template. It is immutable and safe for concurrent rendering.
type Template struct {
	body []stmt
}

// MaxTemplateBytes bounds the template text Parse accepts. Real chat templates are a few KB
// (the largest we know are under 30 KB); the lexer's memory grows with the text.
const MaxTemplateBytes = 1 << 20

// Parse parses a template with the environment transformers uses for chat templates.
func Parse(src string) (*Template, error) {
	if len(src) > MaxTemplateBytes {
		return nil, &Error{Kind: "TemplateSyntaxError", Msg: fmt.Sprintf("the template is %d bytes long; at most %d are accepted", len(src), MaxTemplateBytes)}
	}
	body, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// RenderOptions configure one rendering.
type RenderOptions struct {
	// Now is the clock behind strftime_now (time.Now when nil).
	Now func() time.Time
	// MaxSteps bounds the statements executed, expressions evaluated, loop iterations and
	// macro calls of one rendering (when 0: DefaultMaxSteps plus 100 per list item and dict
	// entry of vars), so a hostile template cannot spin forever; jinja2 has no such limit.
	MaxSteps int64
	// MaxBytes bounds the output and any one string or list built while rendering (when 0:
	// DefaultMaxBytes plus twice the size of vars, so large conversations always fit).
	MaxBytes int64
	// MaxAlloc bounds the bytes one rendering may allocate or read through (comparing,
	// searching, hashing), which bounds both its memory and the time its linear operations
	// take (when 0: DefaultMaxAlloc plus 16 times the size of vars).
	MaxAlloc int64
	// Usage, when not nil, receives what the rendering spent, whether or not it succeeded.
	Usage *Usage
}

// Usage is what one rendering spent of its budgets.
type Usage struct {
	Steps int64 // statements, expressions, loop iterations and macro calls
	Bytes int64 // bytes allocated or read through
}

// Default budgets. The defaults grow with the input, so that a long conversation always
// renders: real chat templates take 20 to 70 steps per message (Qwen3's, the costliest of the
// test data, 66) and allocate or read 2 to 5 times the conversation's bytes (see
// TestRealTemplateUsage). A template that exhausts the defaults fails in about a second.
const (
	DefaultMaxSteps = 1_000_000 // plus stepsPerItem per list item and dict entry of the input
	DefaultMaxBytes = 8 << 20   // plus twice the input's bytes
	DefaultMaxAlloc = 64 << 20  // plus 16 times the input's bytes
	stepsPerItem    = 100
)

// maxDepth bounds macro recursion, as Python's recursion limit would.
const maxDepth = 200

// maxEvalDepth bounds how deeply expressions nest at run time (a chain of 100000 filters is one
// expression nested 100000 deep), so evaluating one cannot exhaust the goroutine stack.
const maxEvalDepth = 1000

// Render renders the template with vars as the template context. Besides vars, the globals
// range, namespace, dict, raise_exception and strftime_now are available.
func (t *Template) Render(vars map[string]Value, opts RenderOptions) (string, error) {
	b := newBudget(opts, vars)
	r := &renderer{now: opts.Now, b: b}
	if r.now == nil {
		r.now = time.Now
	}
	if opts.Usage != nil {
		defer func() {
			opts.Usage.Steps = b.maxSteps - max(b.steps, 0)
			opts.Usage.Bytes = b.maxAlloc - max(b.bytes, 0)
		}()
	}
	globals := &frame{vars: r.globals()}
	ctx := &frame{vars: map[string]Value{}, parent: globals}
	for k, v := range vars {
		ctx.vars[k] = v
	}
	root := &frame{vars: map[string]Value{}, parent: ctx}
	out := newSbuf(b)
	err := r.exec(t.body, root, out)
	switch {
	case errors.Is(err, errBreak), errors.Is(err, errContinue):
		return "", &Error{Kind: "TemplateSyntaxError", Msg: "break or continue outside of a loop"}
	case err != nil:
		return "", err
	}
	return out.String()
}

// newBudget sizes a rendering's budget from opts, scaling the byte defaults with the input.
func newBudget(opts RenderOptions, vars map[string]Value) *budget {
	var in inputSize
	for k, v := range vars {
		in.bytes = add(in.bytes, int64(len(k)))
		in.add(v, 0)
	}
	b := &budget{maxSteps: opts.MaxSteps, maxBytes: opts.MaxBytes, maxAlloc: opts.MaxAlloc}
	if b.maxSteps <= 0 {
		b.maxSteps = add(DefaultMaxSteps, mul(stepsPerItem, in.items))
	}
	if b.maxBytes <= 0 {
		b.maxBytes = add(DefaultMaxBytes, mul(2, in.bytes))
	}
	if b.maxAlloc <= 0 {
		b.maxAlloc = add(DefaultMaxAlloc, mul(16, in.bytes))
	}
	b.steps, b.bytes = b.maxSteps, b.maxAlloc
	return b
}

// inputSize measures the template's input: the bytes it holds (string bytes plus per-item
// overheads) and its items (list items and dict entries). Nesting is followed maxValueDepth
// deep only.
type inputSize struct{ bytes, items int64 }

func (n *inputSize) add(v Value, depth int) {
	if depth > maxValueDepth {
		return
	}
	switch x := v.(type) {
	case string:
		n.bytes = add(n.bytes, int64(len(x)))
	case List:
		n.addItems(x, depth)
	case Tuple:
		n.addItems(x, depth)
	case *Dict:
		n.items = add(n.items, int64(x.Len()))
		n.bytes = add(n.bytes, mul(int64(x.Len()), dictBytes))
		for i, k := range x.keys {
			n.add(k, depth+1)
			n.add(x.vals[i], depth+1)
		}
	default:
		n.bytes = add(n.bytes, itemBytes)
	}
}

func (n *inputSize) addItems(items []Value, depth int) {
	n.items = add(n.items, int64(len(items)))
	n.bytes = add(n.bytes, mul(int64(len(items)), itemBytes))
	for _, it := range items {
		n.add(it, depth+1)
	}
}

type frame struct {
	vars   map[string]Value
	parent *frame
}

func (f *frame) lookup(name string) (Value, bool) {
	for ; f != nil; f = f.parent {
		if v, ok := f.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

func (f *frame) child() *frame { return &frame{vars: map[string]Value{}, parent: f} }

type renderer struct {
	now       func() time.Time
	depth     int // macro calls in progress
	evalDepth int // expressions being evaluated, nested
	b         *budget
}

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

// withLine attaches a template line to errors that lack one.
func withLine(err error, ln int) error {
	var e *Error
	if errors.As(err, &e) && e.Line == 0 {
		e.Line = ln
	}
	return err
}

func (r *renderer) exec(body []stmt, f *frame, out *sbuf) error {
	for _, s := range body {
		if err := r.b.step(); err != nil {
			return err
		}
		if err := r.execOne(s, f, out); err != nil {
			return err
		}
		if err := r.b.failed(); err != nil { // an output write was refused
			return err
		}
	}
	return nil
}

func (r *renderer) execOne(s stmt, f *frame, out *sbuf) error {
	switch s := s.(type) {
	case *dataStmt:
		out.WriteString(s.text)
	case *outputStmt:
		v, err := r.eval(s.x, f)
		if err != nil {
			return err
		}
		text, err := str(r.b, v)
		if err != nil {
			return withLine(err, s.x.line())
		}
		out.WriteString(text)
	case *ifStmt:
		for i, test := range s.tests {
			v, err := r.eval(test, f)
			if err != nil {
				return err
			}
			if Truthy(v) {
				return r.exec(s.bodies[i], f, out)
			}
		}
		return r.exec(s.els, f, out)
	case *forStmt:
		return withLine(r.execFor(s, f, out), s.ln)
	case *setStmt:
		v, err := r.eval(s.x, f)
		if err != nil {
			return err
		}
		return withLine(r.assign(s.target, v, f), s.ln)
	case *setBlockStmt:
		buf := newSbuf(r.b)
		if err := r.exec(s.body, f.child(), buf); err != nil {
			return err
		}
		text, err := buf.String()
		if err != nil {
			return err
		}
		var v Value = text
		if s.filter != nil {
			if v, err = r.applyFilter(s.filter, v, f); err != nil {
				return err
			}
		}
		return withLine(r.assign(s.target, v, f), s.ln)
	case *macroStmt:
		f.vars[s.name] = &Macro{name: s.name, def: s, closure: f,
			catchVarargs: usesName(s.body, "varargs"), catchKwargs: usesName(s.body, "kwargs")}
	case *filterBlockStmt:
		buf := newSbuf(r.b)
		if err := r.exec(s.body, f.child(), buf); err != nil {
			return err
		}
		text, err := buf.String()
		if err != nil {
			return err
		}
		v, err := r.applyFilter(s.filter, text, f)
		if err != nil {
			return err
		}
		if text, err = str(r.b, v); err != nil {
			return err
		}
		out.WriteString(text)
	case *withStmt:
		inner := f.child()
		for i, t := range s.targets {
			v, err := r.eval(s.values[i], f)
			if err != nil {
				return err
			}
			if err := r.assign(t, v, inner); err != nil {
				return withLine(err, s.ln)
			}
		}
		return r.exec(s.body, inner, out)
	case *breakStmt:
		return errBreak
	case *continueStmt:
		return errContinue
	default:
		return fmt.Errorf("jinja: unknown statement %T", s)
	}
	return nil
}

func (r *renderer) execFor(s *forStmt, f *frame, out *sbuf) error {
	seq, err := r.eval(s.iter, f)
	if err != nil {
		return err
	}
	items, err := iterate(r.b, seq)
	if err != nil {
		return err
	}
	// Each iteration gets a fresh scope. Unless a macro defined in the body could keep it,
	// one frame is cleared and reused: allocating a map per iteration was most of a loop's cost.
	var shared *frame
	scope := func() *frame {
		if s.ownFrames {
			return f.child()
		}
		if shared == nil {
			shared = f.child()
		}
		clear(shared.vars)
		return shared
	}
	if s.test != nil {
		var kept []Value
		for _, it := range items {
			if err := r.b.step(); err != nil {
				return err
			}
			tf := scope()
			if err := r.assign(s.target, it, tf); err != nil {
				return err
			}
			ok, err := r.eval(s.test, tf)
			if err != nil {
				return err
			}
			if Truthy(ok) {
				if err := r.b.grow(mul(int64(len(kept)+1), itemBytes), itemBytes); err != nil {
					return err
				}
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return r.exec(s.els, f.child(), out)
	}
	loop := &loopInfo{items: items}
	for i, it := range items {
		if err := r.b.step(); err != nil {
			return err
		}
		inner := scope()
		loop.index0 = i
		inner.vars["loop"] = loop
		if err := r.assign(s.target, it, inner); err != nil {
			return err
		}
		err := r.exec(s.body, inner, out)
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil && !errors.Is(err, errContinue) {
			return err
		}
	}
	return nil
}

func (r *renderer) assign(target expr, v Value, f *frame) error {
	switch t := target.(type) {
	case *nameExpr:
		f.vars[t.name] = v
		return nil
	case *tupleExpr:
		items, err := iterate(r.b, v)
		if err != nil {
			return err
		}
		if len(items) != len(t.items) {
			if len(items) > len(t.items) {
				return valueError("too many values to unpack (expected %d)", len(t.items))
			}
			return valueError("not enough values to unpack (expected %d, got %d)", len(t.items), len(items))
		}
		for i, sub := range t.items {
			if err := r.assign(sub, items[i], f); err != nil {
				return err
			}
		}
		return nil
	case *nsRef:
		obj, _ := f.lookup(t.name)
		ns, ok := obj.(*Namespace)
		if !ok {
			return &Error{Kind: "TemplateRuntimeError", Msg: "cannot assign attribute on non-namespace object"}
		}
		return ns.d.Set(t.attr, v)
	}
	return &Error{Kind: "TemplateSyntaxError", Msg: "cannot assign to this target"}
}

// iterate returns the items Python's iter(v) would produce.
func iterate(b *budget, v Value) ([]Value, error) {
	switch x := v.(type) {
	case List:
		return x, nil
	case Tuple:
		return x, nil
	case *Dict:
		if err := b.alloc(mul(int64(x.Len()), itemBytes)); err != nil {
			return nil, err
		}
		return append([]Value(nil), x.keys...), nil
	case string:
		if err := b.alloc(mul(int64(len(x)), charBytes)); err != nil {
			return nil, err
		}
		out := make([]Value, 0, len(x))
		for _, c := range x {
			out = append(out, string(c))
		}
		return out, nil
	case Undefined:
		if x.unsafe {
			return nil, x.err()
		}
		return nil, nil
	case *loopInfo:
		return nil, typeError("recursive loop calls are not supported")
	}
	return nil, typeError("'%s' object is not iterable", typeName(v))
}

func (r *renderer) eval(x expr, f *frame) (Value, error) {
	if err := r.b.step(); err != nil {
		return nil, withLine(err, x.line())
	}
	if r.evalDepth >= maxEvalDepth {
		return nil, withLine(&Error{Kind: "RecursionError", Msg: fmt.Sprintf("expression nested more than %d levels deep", maxEvalDepth)}, x.line())
	}
	r.evalDepth++
	v, err := r.eval1(x, f)
	r.evalDepth--
	if err == nil {
		err = r.b.failed() // a helper that cannot return errors hit a limit
	}
	if err != nil {
		return nil, withLine(err, x.line())
	}
	return v, nil
}

func (r *renderer) eval1(x expr, f *frame) (Value, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := f.lookup(x.name); ok {
			return v, nil
		}
		return undefinedName(x.name), nil
	case *listExpr:
		if err := r.b.alloc(mul(int64(len(x.items)), itemBytes)); err != nil {
			return nil, err
		}
		out := make(List, len(x.items))
		for i, it := range x.items {
			v, err := r.eval(it, f)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case *tupleExpr:
		if err := r.b.alloc(mul(int64(len(x.items)), itemBytes)); err != nil {
			return nil, err
		}
		out := make(Tuple, len(x.items))
		for i, it := range x.items {
			v, err := r.eval(it, f)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case *dictExpr:
		d := NewDict()
		for i, k := range x.keys {
			kv, err := r.eval(k, f)
			if err != nil {
				return nil, err
			}
			vv, err := r.eval(x.vals[i], f)
			if err != nil {
				return nil, err
			}
			if err := r.b.alloc(dictBytes); err != nil {
				return nil, err
			}
			if err := d.setB(r.b, kv, vv); err != nil {
				return nil, err
			}
		}
		return d, nil
	case *getattrExpr:
		obj, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		return getattr(r.b, obj, x.name)
	case *getitemExpr:
		obj, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		if sl, ok := x.key.(*sliceExpr); ok {
			return r.evalSlice(obj, sl, f)
		}
		key, err := r.eval(x.key, f)
		if err != nil {
			return nil, err
		}
		return getitem(r.b, obj, key)
	case *callExpr:
		fn, err := r.eval(x.fn, f)
		if err != nil {
			return nil, err
		}
		args, kwargs, err := r.evalArgs(&x.callArgs, f)
		if err != nil {
			return nil, err
		}
		return r.call(fn, args, kwargs)
	case *filterExpr:
		v, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		return r.applyFilter(x, v, f)
	case *testExpr:
		v, err := r.eval(x.obj, f)
		if err != nil {
			return nil, err
		}
		args, kwargs, err := r.evalArgs(&x.callArgs, f)
		if err != nil {
			return nil, err
		}
		ok, err := tests[x.name](r, v, args, kwargs)
		return ok, err
	case *unaryExpr:
		v, err := r.eval(x.x, f)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "not":
			if u, ok := v.(Undefined); ok && u.unsafe {
				return nil, u.err()
			}
			return !Truthy(v), nil
		case "-":
			return negate(v)
		default:
			if u, ok := v.(Undefined); ok {
				return nil, u.err()
			}
			if _, _, _, ok := number(v); !ok {
				return nil, typeError("bad operand type for unary +: '%s'", typeName(v))
			}
			if b, ok := v.(bool); ok {
				return boolInt(b), nil
			}
			return v, nil
		}
	case *binExpr:
		l, err := r.eval(x.l, f)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "and":
			if !Truthy(l) {
				return l, nil
			}
			return r.eval(x.r, f)
		case "or":
			if Truthy(l) {
				return l, nil
			}
			return r.eval(x.r, f)
		}
		rv, err := r.eval(x.r, f)
		if err != nil {
			return nil, err
		}
		return binaryOp(r.b, x.op, l, rv)
	case *concatExpr:
		b := newSbuf(r.b)
		for _, p := range x.parts {
			v, err := r.eval(p, f)
			if err != nil {
				return nil, err
			}
			if u, ok := v.(Undefined); ok && u.unsafe {
				return nil, u.err()
			}
			if err := writeStr(b, v); err != nil {
				return nil, err
			}
		}
		return b.String()
	case *compareExpr:
		l, err := r.eval(x.first, f)
		if err != nil {
			return nil, err
		}
		for i, op := range x.ops {
			rv, err := r.eval(x.rest[i], f)
			if err != nil {
				return nil, err
			}
			ok, err := compare(r.b, op, l, rv)
			if err != nil || !ok {
				return false, err
			}
			l = rv
		}
		return true, nil
	case *condExpr:
		t, err := r.eval(x.test, f)
		if err != nil {
			return nil, err
		}
		if Truthy(t) {
			return r.eval(x.then, f)
		}
		if x.els == nil {
			return Undefined{hint: "the inline if-expression evaluated to false and no else section was defined."}, nil
		}
		return r.eval(x.els, f)
	case *nsRef:
		return nil, &Error{Kind: "TemplateSyntaxError", Msg: "namespace reference outside of an assignment"}
	}
	return nil, fmt.Errorf("jinja: unknown expression %T", x)
}

func (r *renderer) evalArgs(c *callArgs, f *frame) ([]Value, *Dict, error) {
	var args []Value
	for _, a := range c.args {
		v, err := r.eval(a, f)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if c.dynArgs != nil {
		v, err := r.eval(c.dynArgs, f)
		if err != nil {
			return nil, nil, err
		}
		more, err := iterate(r.b, v)
		if err != nil {
			return nil, nil, err
		}
		if err := r.b.alloc(mul(int64(len(args)+len(more)), itemBytes)); err != nil {
			return nil, nil, err
		}
		args = append(args, more...)
	}
	var kwargs *Dict
	if len(c.kwNames) > 0 || c.dynKwargs != nil {
		kwargs = NewDict()
		for i, n := range c.kwNames {
			v, err := r.eval(c.kwVals[i], f)
			if err != nil {
				return nil, nil, err
			}
			_ = kwargs.setB(r.b, n, v)
		}
		if c.dynKwargs != nil {
			v, err := r.eval(c.dynKwargs, f)
			if err != nil {
				return nil, nil, err
			}
			d, ok := v.(*Dict)
			if !ok {
				return nil, nil, typeError("argument after ** must be a mapping, not %s", typeName(v))
			}
			if err := r.b.alloc(mul(int64(d.Len()), dictBytes)); err != nil {
				return nil, nil, err
			}
			for i, k := range d.keys {
				_ = kwargs.setB(r.b, k, d.vals[i])
			}
		}
	}
	return args, kwargs, nil
}

func (r *renderer) evalSlice(obj Value, s *sliceExpr, f *frame) (Value, error) {
	var parts [3]Value
	for i, e := range []expr{s.start, s.stop, s.step} {
		if e == nil {
			continue
		}
		v, err := r.eval(e, f)
		if err != nil {
			return nil, err
		}
		parts[i] = v
	}
	if u, ok := obj.(Undefined); ok {
		return nil, u.err()
	}
	return sliceValue(r.b, obj, parts[0], parts[1], parts[2])
}

func (r *renderer) call(fn Value, args []Value, kwargs *Dict) (Value, error) {
	switch c := fn.(type) {
	case *Func:
		return c.Fn(args, kwargs)
	case *Macro:
		return r.callMacro(c, args, kwargs)
	case Undefined:
		return nil, c.err()
	}
	return nil, typeError("'%s' object is not callable", typeName(fn))
}

// Macro is a {% macro %} definition bound to the frame it was defined in.
type Macro struct {
	name         string
	def          *macroStmt
	closure      *frame
	catchVarargs bool
	catchKwargs  bool
}

func (r *renderer) callMacro(m *Macro, args []Value, kwargs *Dict) (Value, error) {
	if err := r.b.step(); err != nil {
		return nil, err
	}
	if r.depth >= maxDepth {
		return nil, &Error{Kind: "RecursionError", Msg: "maximum macro recursion depth exceeded"}
	}
	r.depth++
	defer func() { r.depth-- }()
	f := m.closure.child()
	d := m.def
	var varargs Tuple
	for i, a := range args {
		if i < len(d.args) {
			f.vars[d.args[i]] = a
		} else if m.catchVarargs {
			varargs = append(varargs, a)
		} else {
			return nil, typeError("macro '%s' takes not more than %d argument(s)", m.name, len(d.args))
		}
	}
	extra := NewDict()
	if kwargs != nil {
		for i, k := range kwargs.keys {
			name, _ := k.(string)
			known := false
			for j, a := range d.args {
				if a == name {
					if j < len(args) {
						return nil, typeError("macro '%s' got multiple values for argument '%s'", m.name, name)
					}
					f.vars[name] = kwargs.vals[i]
					known = true
				}
			}
			if !known {
				if !m.catchKwargs {
					return nil, typeError("macro '%s' takes no keyword argument '%s'", m.name, name)
				}
				_ = extra.Set(name, kwargs.vals[i])
			}
		}
	}
	firstDefault := len(d.args) - len(d.defaults)
	for i, a := range d.args {
		if _, ok := f.vars[a]; ok {
			continue
		}
		if i >= firstDefault {
			v, err := r.eval(d.defaults[i-firstDefault], f)
			if err != nil {
				return nil, err
			}
			f.vars[a] = v
		} else {
			f.vars[a] = Undefined{hint: fmt.Sprintf("parameter '%s' was not provided", a)}
		}
	}
	if varargs == nil {
		varargs = Tuple{}
	}
	f.vars["varargs"] = varargs
	f.vars["kwargs"] = extra
	buf := newSbuf(r.b)
	if err := r.exec(d.body, f, buf); err != nil {
		if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
			return nil, &Error{Kind: "TemplateSyntaxError", Msg: "break or continue outside of a loop"}
		}
		return nil, err
	}
	return buf.String()
}

// usesName reports whether any expression in body reads the variable name.
func usesName(body []stmt, name string) bool {
	found := false
	var visitExpr func(x expr)
	visitArgs := func(c *callArgs) {
		for _, a := range c.args {
			visitExpr(a)
		}
		for _, a := range c.kwVals {
			visitExpr(a)
		}
		visitExpr(c.dynArgs)
		visitExpr(c.dynKwargs)
	}
	visitExpr = func(x expr) {
		switch x := x.(type) {
		case nil:
		case *nameExpr:
			if x.name == name {
				found = true
			}
		case *listExpr:
			for _, it := range x.items {
				visitExpr(it)
			}
		case *tupleExpr:
			for _, it := range x.items {
				visitExpr(it)
			}
		case *dictExpr:
			for i := range x.keys {
				visitExpr(x.keys[i])
				visitExpr(x.vals[i])
			}
		case *getattrExpr:
			visitExpr(x.obj)
		case *getitemExpr:
			visitExpr(x.obj)
			visitExpr(x.key)
		case *sliceExpr:
			visitExpr(x.start)
			visitExpr(x.stop)
			visitExpr(x.step)
		case *callExpr:
			visitExpr(x.fn)
			visitArgs(&x.callArgs)
		case *filterExpr:
			visitExpr(x.obj)
			visitArgs(&x.callArgs)
		case *testExpr:
			visitExpr(x.obj)
			visitArgs(&x.callArgs)
		case *unaryExpr:
			visitExpr(x.x)
		case *binExpr:
			visitExpr(x.l)
			visitExpr(x.r)
		case *concatExpr:
			for _, p := range x.parts {
				visitExpr(p)
			}
		case *compareExpr:
			visitExpr(x.first)
			for _, p := range x.rest {
				visitExpr(p)
			}
		case *condExpr:
			visitExpr(x.test)
			visitExpr(x.then)
			visitExpr(x.els)
		}
	}
	var visit func(body []stmt)
	visit = func(body []stmt) {
		for _, s := range body {
			switch s := s.(type) {
			case *outputStmt:
				visitExpr(s.x)
			case *ifStmt:
				for i := range s.tests {
					visitExpr(s.tests[i])
					visit(s.bodies[i])
				}
				visit(s.els)
			case *forStmt:
				visitExpr(s.iter)
				visitExpr(s.test)
				visit(s.body)
				visit(s.els)
			case *setStmt:
				visitExpr(s.x)
			case *setBlockStmt:
				visit(s.body)
			case *filterBlockStmt:
				visit(s.body)
			case *withStmt:
				for _, v := range s.values {
					visitExpr(v)
				}
				visit(s.body)
			}
		}
	}
	visit(body)
	return found
}

// loopInfo is the `loop` variable of a for loop.
type loopInfo struct {
	items   []Value
	index0  int
	changed *Value
}

func (l *loopInfo) attr(b *budget, name string) Value {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.index0 + 1)
	case "index0":
		return int64(l.index0)
	case "revindex":
		return int64(n - l.index0)
	case "revindex0":
		return int64(n - l.index0 - 1)
	case "first":
		return l.index0 == 0
	case "last":
		return l.index0 == n-1
	case "length":
		return int64(n)
	case "depth":
		return int64(1)
	case "depth0":
		return int64(0)
	case "previtem":
		if l.index0 == 0 {
			return Undefined{hint: "there is no previous item"}
		}
		return l.items[l.index0-1]
	case "nextitem":
		if l.index0 == n-1 {
			return Undefined{hint: "there is no next item"}
		}
		return l.items[l.index0+1]
	case "cycle":
		return &Func{Name: "loop.cycle", Fn: func(args []Value, _ *Dict) (Value, error) {
			if len(args) == 0 {
				return nil, typeError("no items for cycling given")
			}
			return args[l.index0%len(args)], nil
		}}
	case "changed":
		return &Func{Name: "loop.changed", Fn: func(args []Value, _ *Dict) (Value, error) {
			v := Value(Tuple(args))
			if l.changed != nil && pyEqual(b, *l.changed, v) {
				return false, nil
			}
			l.changed = &v
			return true, nil
		}}
	}
	return Undefined{hint: fmt.Sprintf("'LoopContext object' has no attribute '%s'", name)}
}

func (r *renderer) globals() map[string]Value {
	return map[string]Value{
		"range": &Func{Name: "range", Fn: func(args []Value, kwargs *Dict) (Value, error) { return builtinRange(r.b, args, kwargs) }},
		"namespace": &Func{Name: "namespace", Fn: func(args []Value, kwargs *Dict) (Value, error) {
			d := NewDict()
			for _, a := range args {
				src, ok := a.(*Dict)
				if !ok {
					return nil, typeError("namespace() positional argument must be a dict")
				}
				if err := d.update(r.b, src); err != nil {
					return nil, err
				}
			}
			if err := d.update(r.b, kwargs); err != nil {
				return nil, err
			}
			return &Namespace{d: d}, nil
		}},
		"dict": &Func{Name: "dict", Fn: func(args []Value, kwargs *Dict) (Value, error) {
			d := NewDict()
			if len(args) > 1 {
				return nil, typeError("dict expected at most 1 argument, got %d", len(args))
			}
			if len(args) == 1 {
				src, ok := args[0].(*Dict)
				if !ok {
					return nil, typeError("dict() argument must be a dict")
				}
				if err := d.update(r.b, src); err != nil {
					return nil, err
				}
			}
			if err := d.update(r.b, kwargs); err != nil {
				return nil, err
			}
			return d, nil
		}},
		"raise_exception": &Func{Name: "raise_exception", Fn: func(args []Value, _ *Dict) (Value, error) {
			msg := ""
			if len(args) > 0 {
				var err error
				if msg, err = str(r.b, args[0]); err != nil {
					return nil, err
				}
			}
			return nil, &Error{Kind: "TemplateError", Msg: msg}
		}},
		"strftime_now": &Func{Name: "strftime_now", Fn: func(args []Value, _ *Dict) (Value, error) {
			if len(args) != 1 {
				return nil, typeError("strftime_now() takes exactly one argument")
			}
			format, ok := args[0].(string)
			if !ok {
				return nil, typeError("strftime() argument 1 must be str, not %s", typeName(args[0]))
			}
			return strftime(r.now(), format)
		}},
	}
}

func builtinRange(b *budget, args []Value, kwargs *Dict) (Value, error) {
	if kwargs != nil && kwargs.Len() > 0 {
		return nil, typeError("range() takes no keyword arguments")
	}
	var n [3]int64
	for i, a := range args {
		v, ok := toInt(a)
		if !ok || i >= 3 {
			return nil, typeError("range() arguments must be integers (at most 3)")
		}
		n[i] = v
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(args) {
	case 1:
		stop = n[0]
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return nil, typeError("range expected at least 1 argument, got 0")
	}
	if step == 0 {
		return nil, valueError("range() arg 3 must not be zero")
	}
	count := rangeLen(start, stop, step)
	if count > maxRange {
		return nil, &Error{Kind: "OverflowError", Msg: "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."}
	}
	if err := b.alloc(count * itemBytes); err != nil {
		return nil, err
	}
	out := make(List, count)
	for k := range out {
		out[k] = start + int64(k)*step
	}
	return out, nil
}

// maxRange is jinja2's sandbox limit on range().
const maxRange = 100000

// rangeLen is len(range(start, stop, step)) without overflow; step is not 0.
func rangeLen(start, stop, step int64) int64 {
	lo, hi, st := start, stop, step
	if step < 0 {
		lo, hi, st = stop, start, -step // st overflows only for MinInt64, handled below
	}
	if hi <= lo {
		return 0
	}
	span := uint64(hi) - uint64(lo) // exact: hi > lo
	if st < 0 {                     // step was MinInt64
		return 1
	}
	return int64((span-1)/uint64(st) + 1)
}
