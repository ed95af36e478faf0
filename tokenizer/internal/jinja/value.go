// Package jinja is a Jinja2 interpreter for Hugging Face chat templates. It reproduces jinja2 3.1
// as transformers configures it for apply_chat_template: ImmutableSandboxedEnvironment with
// trim_blocks and lstrip_blocks, the loopcontrols extension, the {% generation %} tag, HF's tojson
// filter (json.dumps with ensure_ascii=False) and the raise_exception and strftime_now globals.
//
// Values follow Python's data model, because templates print and compare them the Python way:
// nil is None, bool, int64 (int), float64 (float), string (str), List (list), Tuple (tuple),
// *Dict (dict, insertion-ordered), *Namespace, plus callables. Anything the interpreter does not
// implement is reported as an error, never silently rendered differently.
package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Value is a template value (see the package documentation for the Go types used).
type Value = any

// List is a Python list.
type List []Value

// Tuple is a Python tuple.
type Tuple []Value

// Undefined is jinja2's default Undefined: it prints as "", is falsy and iterates as empty, but
// any attribute access, item access, call or arithmetic on it is an error.
type Undefined struct {
	hint string // the error to report when the value is used
	// unsafe marks attributes the sandbox refuses (list.append, dict.update, ...): using them
	// raises SecurityError instead of UndefinedError.
	unsafe bool
}

func undefinedName(name string) Undefined {
	return Undefined{hint: fmt.Sprintf("'%s' is undefined", name)}
}

func undefinedAttr(obj Value, attr string) Undefined {
	return Undefined{hint: fmt.Sprintf("'%s' has no attribute '%s'", objectName(obj), attr)}
}

func (u Undefined) err() error {
	if u.unsafe {
		return &Error{Kind: "SecurityError", Msg: u.hint}
	}
	if u.hint == "" {
		return &Error{Kind: "UndefinedError", Msg: "value is undefined"}
	}
	return &Error{Kind: "UndefinedError", Msg: u.hint}
}

// Dict is an insertion-ordered Python dict. Keys are strings, integers, floats, booleans or None.
type Dict struct {
	keys  []Value
	vals  []Value
	index map[Value]int
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{index: map[Value]int{}} }

// hashKey maps Python-equal keys to one Go map key (1, 1.0 and True are the same key).
func hashKey(k Value) (Value, error) { return hashKeyAt(k, 0) }

func hashKeyAt(k Value, depth int) (Value, error) {
	if depth > maxValueDepth {
		return nil, (*budget)(nil).deep()
	}
	switch v := k.(type) {
	case nil, string, int64:
		return v, nil
	case bool:
		if v {
			return int64(1), nil
		}
		return int64(0), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<62 {
			return int64(v), nil
		}
		return v, nil
	case Tuple:
		parts := make([]string, len(v))
		for i, x := range v {
			h, err := hashKeyAt(x, depth+1)
			if err != nil {
				return nil, err
			}
			parts[i] = fmt.Sprintf("%T:%v", h, h)
		}
		return "\x00tuple:" + strings.Join(parts, "\x00"), nil
	}
	return nil, typeError("unhashable type: '%s'", typeName(k))
}

// Set stores key -> val, keeping the original position of an existing key.
func (d *Dict) Set(key, val Value) error {
	h, err := hashKey(key)
	if err != nil {
		return err
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = val
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, key)
	d.vals = append(d.vals, val)
	return nil
}

// keyCost is what hashing k reads: its strings, and an item's worth per element.
func keyCost(k Value) int64 { return keyCostAt(k, 0) }

func keyCostAt(k Value, depth int) int64 {
	switch x := k.(type) {
	case string:
		return int64(len(x))
	case Tuple:
		n := int64(itemBytes)
		if depth > maxValueDepth {
			return n // hashKey refuses it
		}
		for _, e := range x {
			n = add(n, keyCostAt(e, depth+1))
		}
		return n
	}
	return itemBytes
}

// getB is Get charging b for hashing the key.
func (d *Dict) getB(b *budget, key Value) (Value, bool) {
	if !b.read(keyCost(key)) {
		return nil, false
	}
	return d.Get(key)
}

// setB is Set charging b for hashing the key.
func (d *Dict) setB(b *budget, key, val Value) error {
	if !b.read(keyCost(key)) {
		return b.err
	}
	return d.Set(key, val)
}

// update copies src's entries into d (src may be nil), charging b for them.
func (d *Dict) update(b *budget, src *Dict) error {
	if src == nil {
		return nil
	}
	if err := b.alloc(mul(int64(src.Len()), dictBytes)); err != nil {
		return err
	}
	for i, k := range src.keys {
		if err := d.setB(b, k, src.vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// Get returns the value stored under key.
func (d *Dict) Get(key Value) (Value, bool) {
	h, err := hashKey(key)
	if err != nil {
		return nil, false
	}
	i, ok := d.index[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// Len returns the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order (the slice must not be modified).
func (d *Dict) Keys() []Value { return d.keys }

// Values returns the values in insertion order (the slice must not be modified).
func (d *Dict) Values() []Value { return d.vals }

// Namespace is jinja2's namespace(): the one object templates may assign attributes to.
type Namespace struct{ d *Dict }

// Func is a callable implemented in Go (globals, bound methods).
type Func struct {
	Name string
	Fn   func(args []Value, kwargs *Dict) (Value, error)
}

// Error is a template error, named after the Python exception jinja2 would raise.
type Error struct {
	Kind string // "TemplateSyntaxError", "UndefinedError", "TypeError", "TemplateError", ...
	Msg  string
	Line int // 1-based template line, 0 when unknown
}

// Error implements error: "Kind: message (template line N)".
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %s (template line %d)", e.Kind, e.Msg, e.Line)
	}
	return e.Kind + ": " + e.Msg
}

func typeError(format string, args ...any) error {
	return &Error{Kind: "TypeError", Msg: fmt.Sprintf(format, args...)}
}

func valueError(format string, args ...any) error {
	return &Error{Kind: "ValueError", Msg: fmt.Sprintf(format, args...)}
}

// typeName is Python's type(v).__name__.
func typeName(v Value) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case List:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case *Namespace:
		return "Namespace"
	case Undefined:
		return "Undefined"
	case *Func, *Macro:
		return "function"
	case *loopInfo:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

// objectName is how jinja2's undefined messages name an object ("'dict object' has no ...").
func objectName(v Value) string {
	if v == nil {
		return "None"
	}
	return typeName(v) + " object"
}

// Truthy is Python's bool(v).
func Truthy(v Value) bool {
	switch x := v.(type) {
	case nil, Undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case List:
		return len(x) > 0
	case Tuple:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	}
	return true
}

// Str is Python's str(v) as jinja2 prints it ({{ v }}); Undefined prints as "".
func Str(v Value) string {
	s, _ := str(nil, v)
	return s
}

// Repr is Python's repr(v). A value that contains itself is cut off where it repeats too deeply.
func Repr(v Value) string {
	b := newSbuf(nil)
	writeRepr(b, v, 0)
	return b.sb.String()
}

// str is Str within a budget: the repr of a list or dict may be far larger than the values it
// holds (a list that holds one long string a thousand times).
func str(bud *budget, v Value) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case Undefined:
		return "", nil
	}
	b := newSbuf(bud)
	if err := writeRepr(b, v, 0); err != nil {
		return "", err
	}
	return b.String()
}

// writeStr appends Str(v) to b.
func writeStr(b *sbuf, v Value) error {
	switch x := v.(type) {
	case string:
		b.WriteString(x)
	case Undefined:
	default:
		return writeRepr(b, v, 0)
	}
	return b.bud.failed()
}

func writeRepr(b *sbuf, v Value, depth int) error {
	if depth > maxValueDepth {
		return b.bud.deep()
	}
	if !b.ok() {
		return b.bud.err
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(FloatRepr(x))
	case string:
		writeStrRepr(b, x)
	case List:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, e, depth+1); err != nil {
				return err
			}
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, k, depth+1); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := writeRepr(b, x.vals[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *Namespace:
		b.WriteString("<Namespace ")
		if err := writeRepr(b, x.d, depth+1); err != nil {
			return err
		}
		b.WriteByte('>')
	case Undefined:
		b.WriteString("Undefined")
	case *Func:
		fmt.Fprintf(b, "<function %s>", x.Name)
	case *Macro:
		fmt.Fprintf(b, "<Macro '%s'>", x.name)
	case *loopInfo:
		fmt.Fprintf(b, "<LoopContext %d/%d>", x.index0+1, len(x.items))
	default:
		fmt.Fprintf(b, "%v", x)
	}
	return b.bud.failed()
}

// FloatRepr is Python's repr(float): the shortest digits that round-trip, in fixed notation
// when the decimal exponent is in [-4, 16), otherwise scientific with at least two exponent digits.
func FloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	epos := strings.IndexByte(s, 'e')
	mant, exp := s[:epos], s[epos+1:]
	e, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if e >= -4 && e < 16 {
		if e >= 0 {
			if len(digits) <= e+1 {
				out = digits + strings.Repeat("0", e+1-len(digits)) + ".0"
			} else {
				out = digits[:e+1] + "." + digits[e+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -e-1) + digits
		}
	}
	if out == "" {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if e < 0 {
			sign = "-"
			e = -e
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, e)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// StrRepr is Python's repr(str).
func StrRepr(s string) string {
	b := newSbuf(nil)
	writeStrRepr(b, s)
	return b.sb.String()
}

func writeStrRepr(b *sbuf, s string) {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case isPrintable(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		if !b.ok() {
			return
		}
	}
	b.WriteByte(quote)
}
