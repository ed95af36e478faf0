package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// jsonOptions are the json.dumps arguments HF's tojson filter exposes.
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: single line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// dumpsJSON is Python's json.dumps(v, ...) for template values, within bud.
func dumpsJSON(bud *budget, v Value, o jsonOptions) (string, error) {
	b := newSbuf(bud)
	if err := writeJSON(b, v, o, 0); err != nil {
		return "", err
	}
	return b.String()
}

func writeJSON(b *sbuf, v Value, o jsonOptions, level int) error {
	if level > maxValueDepth {
		return b.bud.deep()
	}
	if !b.ok() {
		return b.bud.err
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case List:
		return writeJSONArray(b, x, o, level)
	case Tuple:
		return writeJSONArray(b, x, o, level)
	case *Dict:
		return writeJSONObject(b, x, o, level)
	default:
		return typeError("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return FloatRepr(f)
}

func newline(b *sbuf, o jsonOptions, level int) {
	if o.indent == nil {
		return
	}
	b.WriteByte('\n')
	for i := 0; i < level && b.ok(); i++ {
		b.WriteString(*o.indent)
	}
}

func writeJSONArray(b *sbuf, items []Value, o jsonOptions, level int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		newline(b, o, level+1)
		if err := writeJSON(b, it, o, level+1); err != nil {
			return err
		}
	}
	newline(b, o, level)
	b.WriteByte(']')
	return nil
}

func jsonKey(k Value) (string, error) {
	switch x := k.(type) {
	case string:
		return x, nil
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return jsonFloat(x), nil
	}
	return "", typeError("keys must be str, int, float, bool or None, not %s", typeName(k))
}

func writeJSONObject(b *sbuf, d *Dict, o jsonOptions, level int) error {
	if d.Len() == 0 {
		b.WriteString("{}")
		return nil
	}
	order := make([]int, d.Len())
	for i := range order {
		order[i] = i
	}
	if o.sortKeys {
		var err error
		sort.SliceStable(order, func(i, j int) bool {
			c, e := pyCompare(b.bud, d.keys[order[i]], d.keys[order[j]])
			if e != nil && err == nil {
				err = e
			}
			return c < 0
		})
		if err != nil {
			return err
		}
	}
	b.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			b.WriteString(o.itemSep)
		}
		newline(b, o, level+1)
		k, err := jsonKey(d.keys[i])
		if err != nil {
			return err
		}
		writeJSONString(b, k, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, d.vals[i], o, level+1); err != nil {
			return err
		}
	}
	newline(b, o, level)
	b.WriteByte('}')
	return nil
}

// writeJSONString escapes like json.dumps: \" \\ \n \r \t \b \f, other controls as \u00XX, and
// with ensure_ascii every non-ASCII character as \uXXXX (surrogate pairs above U+FFFF).
func writeJSONString(b *sbuf, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case r < utf8.RuneSelf || !ensureASCII:
				b.WriteRune(r)
			case r < 0x10000:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			}
		}
		if !b.ok() {
			return
		}
	}
	b.WriteByte('"')
}

// tojson is HF's filter: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
func tojson(bud *budget, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("tojson", args, kw, 0, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return nil, err
	}
	o := jsonOptions{itemSep: ", ", keySep: ": "}
	if !isMissing(a[0]) {
		o.ensureASCII = Truthy(a[0])
	}
	if !isMissing(a[1]) && a[1] != nil {
		var ind string
		switch x := a[1].(type) {
		case string:
			ind = x
		default:
			n, ok := toInt(x)
			if !ok {
				return nil, typeError("indent must be an int or a str")
			}
			if err := bud.alloc(n); err != nil { // checked before the spaces are made
				return nil, err
			}
			ind = strings.Repeat(" ", int(max(n, 0)))
		}
		o.indent = &ind
		o.itemSep = ","
	}
	if !isMissing(a[2]) && a[2] != nil {
		seps, err := iterate(bud, a[2])
		if err != nil || len(seps) != 2 {
			return nil, valueError("separators must be a (item_separator, key_separator) pair")
		}
		is, ok1 := seps[0].(string)
		ks, ok2 := seps[1].(string)
		if !ok1 || !ok2 {
			return nil, typeError("separators must be strings")
		}
		o.itemSep, o.keySep = is, ks
	}
	if !isMissing(a[3]) {
		o.sortKeys = Truthy(a[3])
	}
	if u, ok := v.(Undefined); ok && u.unsafe {
		return nil, u.err()
	}
	return dumpsJSON(bud, v, o)
}
