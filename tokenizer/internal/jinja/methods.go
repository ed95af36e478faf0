package jinja

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Methods of str, dict, list and tuple that templates call (message.content.startswith(...)).
// Mutating methods exist in Python but the immutable sandbox refuses them.

var unsafeMethods = map[string]map[string]bool{
	"dict": {"pop": true, "popitem": true, "setdefault": true, "update": true, "clear": true},
	"list": {"append": true, "extend": true, "insert": true, "pop": true, "remove": true, "reverse": true, "sort": true, "clear": true},
}

// bindArgs maps positional and keyword arguments onto names; required is how many must be given.
func bindArgs(fname string, args []Value, kwargs *Dict, required int, names ...string) ([]Value, error) {
	out := make([]Value, len(names))
	set := make([]bool, len(names))
	if len(args) > len(names) {
		return nil, typeError("%s() takes at most %d arguments (%d given)", fname, len(names), len(args))
	}
	for i, a := range args {
		out[i], set[i] = a, true
	}
	if kwargs != nil {
		for i, k := range kwargs.keys {
			found := false
			for j, n := range names {
				if k == n {
					if set[j] {
						return nil, typeError("%s() got multiple values for argument '%s'", fname, n)
					}
					out[j], set[j], found = kwargs.vals[i], true, true
				}
			}
			if !found {
				return nil, typeError("%s() got an unexpected keyword argument '%s'", fname, Str(k))
			}
		}
	}
	for i := 0; i < required; i++ {
		if !set[i] {
			return nil, typeError("%s() missing required argument '%s'", fname, names[i])
		}
	}
	for i := range out {
		if !set[i] {
			out[i] = missing{}
		}
	}
	return out, nil
}

// missing marks an optional argument that was not passed.
type missing struct{}

func isMissing(v Value) bool { _, ok := v.(missing); return ok }

func optString(v Value, fname string) (*string, error) {
	if isMissing(v) || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, typeError("%s arg must be None or str", fname)
	}
	return &s, nil
}

func optInt(v Value, def int64) (int64, error) {
	if isMissing(v) || v == nil {
		return def, nil
	}
	i, ok := toInt(v)
	if !ok {
		return 0, typeError("'%s' object cannot be interpreted as an integer", typeName(v))
	}
	return i, nil
}

func mustString(v Value, what string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", typeError("%s must be str, not %s", what, typeName(v))
	}
	return s, nil
}

// method returns the bound method name of obj, if obj's Python type has one.
func method(b *budget, obj Value, name string) (Value, bool) {
	tn := typeName(obj)
	if unsafeMethods[tn][name] {
		return Undefined{unsafe: true, hint: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, tn)}, true
	}
	var fn func(args []Value, kwargs *Dict) (Value, error)
	switch o := obj.(type) {
	case string:
		fn = strMethod(b, o, name)
	case *Dict:
		fn = dictMethod(b, o, name)
	case List:
		fn = seqMethod(b, o, name, true)
	case Tuple:
		fn = seqMethod(b, o, name, false)
	}
	if fn == nil {
		return nil, false
	}
	return &Func{Name: tn + "." + name, Fn: fn}, true
}

func dictMethod(b *budget, d *Dict, name string) func([]Value, *Dict) (Value, error) {
	switch name {
	case "items":
		return func(args []Value, kw *Dict) (Value, error) {
			if err := b.alloc(mul(int64(d.Len()), 4*itemBytes)); err != nil { // the list and a pair per entry
				return nil, err
			}
			out := make(List, d.Len())
			for i, k := range d.keys {
				out[i] = Tuple{k, d.vals[i]}
			}
			return out, nil
		}
	case "keys":
		return func(args []Value, kw *Dict) (Value, error) { return copyItems(b, d.keys) }
	case "values":
		return func(args []Value, kw *Dict) (Value, error) { return copyItems(b, d.vals) }
	case "get":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs("get", args, nil, 1, "key", "default")
			if err != nil {
				return nil, err
			}
			if v, ok := d.getB(b, a[0]); ok {
				return v, nil
			}
			if isMissing(a[1]) {
				return nil, nil
			}
			return a[1], nil
		}
	case "copy":
		return func(args []Value, kw *Dict) (Value, error) {
			c := NewDict()
			return c, c.update(b, d)
		}
	}
	return nil
}

// copyItems returns a new list of items, charged to b.
func copyItems(b *budget, items []Value) (List, error) {
	if err := b.alloc(mul(int64(len(items)), itemBytes)); err != nil {
		return nil, err
	}
	return append(make(List, 0, len(items)), items...), nil
}

func seqMethod(b *budget, items []Value, name string, isList bool) func([]Value, *Dict) (Value, error) {
	switch name {
	case "index":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs("index", args, nil, 1, "value")
			if err != nil {
				return nil, err
			}
			for i, x := range items {
				if pyEqual(b, x, a[0]) {
					return int64(i), nil
				}
				if err := b.failed(); err != nil {
					return nil, err
				}
			}
			return nil, valueError("%s is not in list", truncRepr(a[0]))
		}
	case "count":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs("count", args, nil, 1, "value")
			if err != nil {
				return nil, err
			}
			n := int64(0)
			for _, x := range items {
				if pyEqual(b, x, a[0]) {
					n++
				}
			}
			return n, b.failed()
		}
	case "copy":
		if isList {
			return func(args []Value, kw *Dict) (Value, error) { return copyItems(b, items) }
		}
	}
	return nil
}

// runeIndex converts a byte offset in s to a code point index.
func runeIndex(s string, byteOff int) int64 { return int64(utf8.RuneCountInString(s[:byteOff])) }

func strMethod(b *budget, s string, name string) func([]Value, *Dict) (Value, error) {
	// Every str method reads s through at most once (replace, split and join also build);
	// charge that up front.
	if !b.read(int64(len(s))) {
		return func([]Value, *Dict) (Value, error) { return nil, b.err }
	}
	noArgs := func(f func() Value) func([]Value, *Dict) (Value, error) {
		return func(args []Value, kw *Dict) (Value, error) {
			if _, err := bindArgs(name, args, kw, 0); err != nil {
				return nil, err
			}
			return f(), nil
		}
	}
	strip := func(left, right bool) func([]Value, *Dict) (Value, error) {
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, kw, 0, "chars")
			if err != nil {
				return nil, err
			}
			chars, err := optString(a[0], name)
			if err != nil {
				return nil, err
			}
			return pyStripSet(s, chars, left, right), nil
		}
	}
	affix := func(suffix bool) func([]Value, *Dict) (Value, error) {
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, kw, 1, "prefix", "start", "end")
			if err != nil {
				return nil, err
			}
			if !isMissing(a[1]) || !isMissing(a[2]) {
				return nil, typeError("%s() with start/end is not supported", name)
			}
			var cands []Value
			switch p := a[0].(type) {
			case string:
				cands = []Value{p}
			case Tuple:
				cands = p
			default:
				return nil, typeError("%s first arg must be str or a tuple of str, not %s", name, typeName(a[0]))
			}
			for _, c := range cands {
				cs, ok := c.(string)
				if !ok {
					return nil, typeError("tuple for %s must only contain str, not %s", name, typeName(c))
				}
				if (!suffix && strings.HasPrefix(s, cs)) || (suffix && strings.HasSuffix(s, cs)) {
					return true, nil
				}
			}
			return false, nil
		}
	}
	find := func(last, raise bool) func([]Value, *Dict) (Value, error) {
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, nil, 1, "sub")
			if err != nil {
				return nil, err
			}
			sub, err := mustString(a[0], "substring")
			if err != nil {
				return nil, err
			}
			i := strings.Index(s, sub)
			if last {
				i = strings.LastIndex(s, sub)
			}
			if i < 0 {
				if raise {
					return nil, valueError("substring not found")
				}
				return int64(-1), nil
			}
			return runeIndex(s, i), nil
		}
	}
	switch name {
	case "startswith":
		return affix(false)
	case "endswith":
		return affix(true)
	case "strip":
		return strip(true, true)
	case "lstrip":
		return strip(true, false)
	case "rstrip":
		return strip(false, true)
	case "split", "rsplit":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, kw, 0, "sep", "maxsplit")
			if err != nil {
				return nil, err
			}
			sep, err := optString(a[0], name)
			if err != nil {
				return nil, err
			}
			n, err := optInt(a[1], -1)
			if err != nil {
				return nil, err
			}
			if name == "rsplit" {
				return pyRsplit(b, s, sep, int(n))
			}
			return pySplit(b, s, sep, int(n))
		}
	case "splitlines":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, kw, 0, "keepends")
			if err != nil {
				return nil, err
			}
			keep := !isMissing(a[0]) && Truthy(a[0])
			out := List{}
			rest := s
			for rest != "" {
				if err := b.grow(mul(int64(len(out)+1), partBytes), partBytes); err != nil {
					return nil, err
				}
				i := strings.IndexAny(rest, "\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029")
				if i < 0 {
					out = append(out, rest)
					break
				}
				_, w := utf8.DecodeRuneInString(rest[i:])
				if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
					w = 2
				}
				if keep {
					out = append(out, rest[:i+w])
				} else {
					out = append(out, rest[:i])
				}
				rest = rest[i+w:]
			}
			return out, nil
		}
	case "replace":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, kw, 2, "old", "new", "count")
			if err != nil {
				return nil, err
			}
			old, err := mustString(a[0], "replace() argument 1")
			if err != nil {
				return nil, err
			}
			nw, err := mustString(a[1], "replace() argument 2")
			if err != nil {
				return nil, err
			}
			n, err := optInt(a[2], -1)
			if err != nil {
				return nil, err
			}
			return replace(b, s, old, nw, n)
		}
	case "upper", "lower", "title", "capitalize":
		// Case mappings grow a string at most threefold ("ΐ".upper() is three code points).
		if err := b.alloc(mul(int64(len(s)), 3)); err != nil {
			return func([]Value, *Dict) (Value, error) { return nil, err }
		}
		fn := map[string]func(string) string{"upper": pyUpper, "lower": pyLower, "title": pyTitle, "capitalize": pyCapitalize}[name]
		return noArgs(func() Value { return fn(s) })
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "isupper", "islower":
		return noArgs(func() Value { return pyIsX(s, name) })
	case "find":
		return find(false, false)
	case "rfind":
		return find(true, false)
	case "index":
		return find(false, true)
	case "rindex":
		return find(true, true)
	case "count":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, nil, 1, "sub")
			if err != nil {
				return nil, err
			}
			sub, err := mustString(a[0], "substring")
			if err != nil {
				return nil, err
			}
			return int64(strings.Count(s, sub)), nil
		}
	case "join":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, nil, 1, "iterable")
			if err != nil {
				return nil, err
			}
			items, err := iterate(b, a[0])
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				p, ok := it.(string)
				if !ok {
					return nil, typeError("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
				parts[i] = p
			}
			return join(b, parts, s)
		}
	case "removeprefix", "removesuffix":
		return func(args []Value, kw *Dict) (Value, error) {
			a, err := bindArgs(name, args, nil, 1, "affix")
			if err != nil {
				return nil, err
			}
			x, err := mustString(a[0], name+"() argument")
			if err != nil {
				return nil, err
			}
			if name == "removeprefix" {
				return strings.TrimPrefix(s, x), nil
			}
			return strings.TrimSuffix(s, x), nil
		}
	case "format":
		return func(args []Value, kw *Dict) (Value, error) { return strFormat(b, s, args, kw) }
	}
	return nil
}

// strFormat implements str.format for {} / {0} / {name} fields without format specs.
func strFormat(bud *budget, s string, args []Value, kw *Dict) (Value, error) {
	b := newSbuf(bud)
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return nil, valueError("Single '{' encountered in format string")
			}
			field := s[i+1 : i+j]
			i += j
			if strings.ContainsAny(field, ":!.[") {
				return nil, valueError("format field %q: specs and conversions are not supported", field)
			}
			var v Value
			switch {
			case field == "":
				if auto >= len(args) {
					return nil, &Error{Kind: "IndexError", Msg: "Replacement index out of range"}
				}
				v = args[auto]
				auto++
			case field[0] >= '0' && field[0] <= '9':
				n, err := strconv.Atoi(field)
				if err != nil || n >= len(args) {
					return nil, &Error{Kind: "IndexError", Msg: "Replacement index out of range"}
				}
				v = args[n]
			default:
				var ok bool
				if kw != nil {
					v, ok = kw.getB(bud, field)
				}
				if !ok {
					return nil, &Error{Kind: "KeyError", Msg: StrRepr(field)}
				}
			}
			if err := writeStr(b, v); err != nil {
				return nil, err
			}
		case c == '}':
			return nil, valueError("Single '}' encountered in format string")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// replace is strings.Replace(s, old, nw, n) once the result is known to fit b.
func replace(b *budget, s, old, nw string, n int64) (string, error) {
	count := int64(strings.Count(s, old))
	if old == "" {
		count = int64(runeLen(s)) + 1
	}
	if n >= 0 && n < count {
		count = n
	}
	if err := b.alloc(add(int64(len(s)), mul(count, int64(len(nw))))); err != nil {
		return "", err
	}
	return strings.Replace(s, old, nw, int(min(n, int64(math.MaxInt)))), nil
}

// join is strings.Join(parts, sep) once the result is known to fit b.
func join(b *budget, parts []string, sep string) (string, error) {
	n := mul(int64(max(len(parts)-1, 0)), int64(len(sep)))
	for _, p := range parts {
		n = add(n, int64(len(p)))
	}
	if err := b.alloc(n); err != nil {
		return "", err
	}
	return strings.Join(parts, sep), nil
}

// truncRepr is repr(v) cut to a length fit for an error message.
func truncRepr(v Value) string {
	b := newSbuf(&budget{maxBytes: 200, bytes: 1 << 20})
	writeRepr(b, v, 0)
	if !b.ok() {
		return b.sb.String() + "..."
	}
	return b.sb.String()
}

// truncStr is str(v) cut to a length fit for an error message.
func truncStr(v Value) string {
	if s, ok := v.(string); ok {
		if len(s) > 200 {
			return s[:200] + "..."
		}
		return s
	}
	return truncRepr(v)
}
