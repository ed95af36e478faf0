package jinja

import (
	"fmt"
	"math"
	"strings"
)

// Python operator semantics.

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// number reports v as a Python number (bool counts as int).
func number(v Value) (i int64, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case bool:
		return boolInt(x), 0, false, true
	case int64:
		return x, 0, false, true
	case float64:
		return 0, x, true, true
	}
	return 0, 0, false, false
}

func toFloat(v Value) (float64, bool) {
	i, f, isF, ok := number(v)
	if !ok {
		return 0, false
	}
	if isF {
		return f, true
	}
	return float64(i), true
}

func toInt(v Value) (int64, bool) {
	i, _, isF, ok := number(v)
	return i, ok && !isF
}

func negate(v Value) (Value, error) {
	if u, ok := v.(Undefined); ok {
		return nil, u.err()
	}
	i, f, isF, ok := number(v)
	switch {
	case !ok:
		return nil, typeError("bad operand type for unary -: '%s'", typeName(v))
	case isF:
		return -f, nil
	case i == math.MinInt64:
		return nil, &Error{Kind: "OverflowError", Msg: "integer overflow"}
	}
	return -i, nil
}

func overflow() error {
	return &Error{Kind: "OverflowError", Msg: "integer result out of the 64-bit range"}
}

func binaryOp(op string, l, r Value) (Value, error) {
	for _, v := range [2]Value{l, r} {
		if u, ok := v.(Undefined); ok {
			return nil, u.err()
		}
	}
	li, lf, lF, lok := number(l)
	ri, rf, rF, rok := number(r)
	if lok && rok {
		if !lF && !rF {
			return intOp(op, li, ri)
		}
		if !lF {
			lf = float64(li)
		}
		if !rF {
			rf = float64(ri)
		}
		return floatOp(op, lf, rf)
	}
	switch op {
	case "+":
		switch a := l.(type) {
		case string:
			if b, ok := r.(string); ok {
				return a + b, nil
			}
			return nil, typeError(`can only concatenate str (not "%s") to str`, typeName(r))
		case List:
			if b, ok := r.(List); ok {
				return append(append(List{}, a...), b...), nil
			}
			return nil, typeError(`can only concatenate list (not "%s") to list`, typeName(r))
		case Tuple:
			if b, ok := r.(Tuple); ok {
				return append(append(Tuple{}, a...), b...), nil
			}
			return nil, typeError(`can only concatenate tuple (not "%s") to tuple`, typeName(r))
		}
	case "*":
		seq, n := l, r
		if lok {
			seq, n = r, l
		}
		count, ok := toInt(n)
		if ok {
			if count < 0 {
				count = 0
			}
			switch s := seq.(type) {
			case string:
				if int64(len(s))*count > 1<<26 {
					return nil, &Error{Kind: "OverflowError", Msg: "repeated string too long"}
				}
				return strings.Repeat(s, int(count)), nil
			case List:
				if int64(len(s))*count > 1<<22 {
					return nil, &Error{Kind: "OverflowError", Msg: "repeated list too long"}
				}
				out := List{}
				for k := int64(0); k < count; k++ {
					out = append(out, s...)
				}
				return out, nil
			}
		}
	case "%":
		if s, ok := l.(string); ok {
			return percentFormat(s, r)
		}
	}
	return nil, typeError("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

func intOp(op string, a, b int64) (Value, error) {
	switch op {
	case "+":
		s := a + b
		if (s > a) != (b > 0) {
			return nil, overflow()
		}
		return s, nil
	case "-":
		s := a - b
		if (s < a) != (b > 0) {
			return nil, overflow()
		}
		return s, nil
	case "*":
		if a != 0 && b != 0 {
			p := a * b
			if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
				return nil, overflow()
			}
			return p, nil
		}
		return int64(0), nil
	case "/":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "division by zero"}
		}
		return float64(a) / float64(b), nil
	case "//":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "integer division or modulo by zero"}
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q, nil
	case "%":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "integer modulo by zero"}
		}
		m := a % b
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		}
		return m, nil
	case "**":
		if b < 0 {
			return math.Pow(float64(a), float64(b)), nil
		}
		res := int64(1)
		for k := int64(0); k < b; k++ {
			v, err := intOp("*", res, a)
			if err != nil {
				return nil, err
			}
			res = v.(int64)
			if res == 0 || res == 1 && a == 1 {
				break
			}
		}
		return res, nil
	}
	return nil, typeError("unsupported operator %s", op)
}

func floatOp(op string, a, b float64) (Value, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float division by zero"}
		}
		return a / b, nil
	case "//":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float floor division by zero"}
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, &Error{Kind: "ZeroDivisionError", Msg: "float modulo"}
		}
		m := math.Mod(a, b)
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		}
		return m, nil
	case "**":
		return math.Pow(a, b), nil
	}
	return nil, typeError("unsupported operator %s", op)
}

// percentFormat implements the common part of Python's printf-style str % args.
func percentFormat(format string, arg Value) (Value, error) {
	args := []Value{arg}
	if t, ok := arg.(Tuple); ok {
		args = t
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(format) {
			return nil, valueError("incomplete format")
		}
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		if n >= len(args) {
			return nil, typeError("not enough arguments for format string")
		}
		a := args[n]
		n++
		switch format[i] {
		case 's':
			b.WriteString(Str(a))
		case 'r':
			b.WriteString(Repr(a))
		case 'd', 'i':
			v, ok := toInt(a)
			if f, isF := a.(float64); isF {
				v, ok = int64(f), true
			}
			if !ok {
				return nil, typeError("%%d format: a real number is required, not %s", typeName(a))
			}
			fmt.Fprintf(&b, "%d", v)
		default:
			return nil, valueError("unsupported format character '%c'", format[i])
		}
	}
	if n < len(args) {
		return nil, typeError("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// pyEqual is Python's ==.
func pyEqual(a, b Value) bool {
	if _, ok := a.(Undefined); ok {
		_, ok2 := b.(Undefined)
		return ok2
	}
	ai, af, aF, aok := number(a)
	bi, bf, bF, bok := number(b)
	if aok && bok {
		switch {
		case !aF && !bF:
			return ai == bi
		case aF && bF:
			return af == bf
		case aF:
			return af == float64(bi)
		default:
			return float64(ai) == bf
		}
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case List:
		y, ok := b.(List)
		return ok && seqEqual(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && seqEqual(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.keys {
			v, ok := y.Get(k)
			if !ok || !pyEqual(x.vals[i], v) {
				return false
			}
		}
		return true
	}
	return a == b
}

func seqEqual(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pyEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// pyCompare orders a and b as Python's < does, or fails with TypeError.
func pyCompare(a, b Value) (int, error) {
	for _, v := range [2]Value{a, b} {
		if u, ok := v.(Undefined); ok {
			return 0, u.err()
		}
	}
	if af, ok := toFloat(a); ok {
		if bf, ok := toFloat(b); ok {
			ai, _ := toInt(a)
			bi, _ := toInt(b)
			_, aIsInt := toInt(a)
			_, bIsInt := toInt(b)
			if aIsInt && bIsInt {
				return cmpOrdered(ai, bi), nil
			}
			return cmpOrdered(af, bf), nil
		}
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case List:
		if y, ok := b.(List); ok {
			return seqCompare(x, y)
		}
	case Tuple:
		if y, ok := b.(Tuple); ok {
			return seqCompare(x, y)
		}
	}
	return 0, typeError("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func seqCompare(a, b []Value) (int, error) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if pyEqual(a[i], b[i]) {
			continue
		}
		return pyCompare(a[i], b[i])
	}
	return cmpOrdered(int64(len(a)), int64(len(b))), nil
}

func contains(container, item Value) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, typeError("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case List:
		for _, x := range c {
			if pyEqual(x, item) {
				return true, nil
			}
		}
		return false, nil
	case Tuple:
		for _, x := range c {
			if pyEqual(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *Dict:
		if _, err := hashKey(item); err != nil {
			return false, err
		}
		_, ok := c.Get(item)
		return ok, nil
	case Undefined:
		if c.unsafe {
			return false, c.err()
		}
		return false, nil
	}
	return false, typeError("argument of type '%s' is not iterable", typeName(container))
}

func compare(op string, a, b Value) (bool, error) {
	switch op {
	case "eq":
		return pyEqual(a, b), nil
	case "ne":
		return !pyEqual(a, b), nil
	case "in":
		return contains(b, a)
	case "notin":
		ok, err := contains(b, a)
		return !ok, err
	}
	c, err := pyCompare(a, b)
	if err != nil {
		return false, err
	}
	switch op {
	case "lt":
		return c < 0, nil
	case "lteq":
		return c <= 0, nil
	case "gt":
		return c > 0, nil
	}
	return c >= 0, nil
}

// getattr is jinja2's sandboxed environment.getattr: attribute first, then item.
func getattr(obj Value, name string) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, u.err()
	}
	if strings.HasPrefix(name, "__") {
		return Undefined{unsafe: true, hint: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, typeName(obj))}, nil
	}
	switch o := obj.(type) {
	case *Dict:
		if m, ok := method(obj, name); ok {
			return m, nil
		}
		if v, ok := o.Get(name); ok {
			return v, nil
		}
	case *Namespace:
		if v, ok := o.d.Get(name); ok {
			return v, nil
		}
	case *loopInfo:
		return o.attr(name), nil
	default:
		if m, ok := method(obj, name); ok {
			return m, nil
		}
	}
	return undefinedAttr(obj, name), nil
}

// getitem is jinja2's environment.getitem: item first, then (for string keys) attribute.
func getitem(obj Value, key Value) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, u.err()
	}
	switch o := obj.(type) {
	case *Dict:
		if _, err := hashKey(key); err == nil {
			if v, ok := o.Get(key); ok {
				return v, nil
			}
		}
	case List, Tuple, string:
		if k, ok := toInt(key); ok {
			return index(obj, k), nil
		}
	}
	if name, ok := key.(string); ok {
		return getattr(obj, name)
	}
	return Undefined{hint: fmt.Sprintf("'%s' has no attribute '%s'", objectName(obj), Str(key))}, nil
}

func index(obj Value, k int64) Value {
	var n int64
	switch o := obj.(type) {
	case List:
		n = int64(len(o))
	case Tuple:
		n = int64(len(o))
	case string:
		n = int64(runeLen(o))
	}
	if k < 0 {
		k += n
	}
	if k < 0 || k >= n {
		return Undefined{hint: fmt.Sprintf("%s object has no element %d", typeName(obj), k)}
	}
	switch o := obj.(type) {
	case List:
		return o[k]
	case Tuple:
		return o[k]
	}
	return string([]rune(obj.(string))[k])
}

// sliceValue is obj[start:stop:step] with Python's index adjustment.
func sliceValue(obj, startV, stopV, stepV Value) (Value, error) {
	var n int
	var items []Value
	var runes []rune
	switch o := obj.(type) {
	case List:
		items, n = o, len(o)
	case Tuple:
		items, n = o, len(o)
	case string:
		runes = []rune(o)
		n = len(runes)
	default:
		return Undefined{hint: fmt.Sprintf("'%s' object is not subscriptable", typeName(obj))}, nil
	}
	get := func(v Value, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := toInt(v)
		if !ok {
			return 0, typeError("slice indices must be integers or None")
		}
		return i, nil
	}
	step, err := get(stepV, 1)
	if err != nil {
		return nil, err
	}
	if step == 0 {
		return nil, valueError("slice step cannot be zero")
	}
	var defStart, defStop int64 = 0, int64(n)
	if step < 0 {
		defStart, defStop = int64(n)-1, -1
	}
	start, err := get(startV, defStart)
	if err != nil {
		return nil, err
	}
	stop, err := get(stopV, defStop)
	if err != nil {
		return nil, err
	}
	adjust := func(i int64, isSet bool) int64 {
		if !isSet {
			return i
		}
		if i < 0 {
			i += int64(n)
			if i < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if i >= int64(n) {
			if step < 0 {
				return int64(n) - 1
			}
			return int64(n)
		}
		return i
	}
	start = adjust(start, startV != nil)
	stop = adjust(stop, stopV != nil)
	var idx []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		idx = append(idx, i)
	}
	switch obj.(type) {
	case string:
		out := make([]rune, len(idx))
		for k, i := range idx {
			out[k] = runes[i]
		}
		return string(out), nil
	case Tuple:
		out := make(Tuple, len(idx))
		for k, i := range idx {
			out[k] = items[i]
		}
		return out, nil
	}
	out := make(List, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return out, nil
}
