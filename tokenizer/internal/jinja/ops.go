package jinja

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
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

func binaryOp(b *budget, op string, l, r Value) (Value, error) {
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
			if c, ok := r.(string); ok {
				if err := b.alloc(add(int64(len(a)), int64(len(c)))); err != nil {
					return nil, err
				}
				return a + c, nil
			}
			return nil, typeError(`can only concatenate str (not "%s") to str`, typeName(r))
		case List:
			if c, ok := r.(List); ok {
				if err := b.alloc(mul(int64(len(a)+len(c)), itemBytes)); err != nil {
					return nil, err
				}
				return append(append(make(List, 0, len(a)+len(c)), a...), c...), nil
			}
			return nil, typeError(`can only concatenate list (not "%s") to list`, typeName(r))
		case Tuple:
			if c, ok := r.(Tuple); ok {
				if err := b.alloc(mul(int64(len(a)+len(c)), itemBytes)); err != nil {
					return nil, err
				}
				return append(append(make(Tuple, 0, len(a)+len(c)), a...), c...), nil
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
			// The size is checked before anything is allocated, with a product that saturates
			// instead of overflowing ("ab" * 2**62 is too long, not negative).
			switch s := seq.(type) {
			case string:
				if err := b.alloc(mul(int64(len(s)), count)); err != nil {
					return nil, err
				}
				if s == "" {
					return "", nil
				}
				return strings.Repeat(s, int(count)), nil
			case List:
				if err := b.alloc(mul(mul(int64(len(s)), count), itemBytes)); err != nil {
					return nil, err
				}
				return repeatItems(s, count), nil
			case Tuple:
				if err := b.alloc(mul(mul(int64(len(s)), count), itemBytes)); err != nil {
					return nil, err
				}
				return repeatItems(s, count), nil
			}
		}
	case "%":
		if s, ok := l.(string); ok {
			return percentFormat(b, s, r)
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
		return intPow(a, b)
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

// intPow is a**b for b >= 0 by squaring: 64 multiplications at most, so (-1) ** 2**62 is as
// quick as 2 ** 3. A result outside the 64-bit range is an OverflowError.
func intPow(a, b int64) (Value, error) {
	switch a {
	case 0, 1:
		if b == 0 {
			return int64(1), nil
		}
		return a, nil
	case -1:
		if b%2 == 0 {
			return int64(1), nil
		}
		return int64(-1), nil
	}
	res, base := int64(1), a
	for {
		if b&1 == 1 {
			v, err := intOp("*", res, base)
			if err != nil {
				return nil, err
			}
			res = v.(int64)
		}
		b >>= 1
		if b == 0 {
			return res, nil
		}
		v, err := intOp("*", base, base)
		if err != nil {
			return nil, err
		}
		base = v.(int64)
	}
}

// repeatItems is items * count for a list or tuple; the caller has checked the size.
func repeatItems[S ~[]Value](items S, count int64) S {
	if len(items) == 0 {
		return S{}
	}
	out := make(S, 0, int64(len(items))*count)
	for k := int64(0); k < count; k++ {
		out = append(out, items...)
	}
	return out
}

// percentFormat implements the common part of Python's printf-style str % args.
func percentFormat(bud *budget, format string, arg Value) (Value, error) {
	args := []Value{arg}
	if t, ok := arg.(Tuple); ok {
		args = t
	}
	b := newSbuf(bud)
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
			if err := writeStr(b, a); err != nil {
				return nil, err
			}
		case 'r':
			if err := writeRepr(b, a, 0); err != nil {
				return nil, err
			}
		case 'd', 'i':
			v, ok := toInt(a)
			if f, isF := a.(float64); isF {
				v, ok = int64(f), true
			}
			if !ok {
				return nil, typeError("%%d format: a real number is required, not %s", typeName(a))
			}
			fmt.Fprintf(b, "%d", v)
		default:
			return nil, valueError("unsupported format character '%c'", format[i])
		}
	}
	if n < len(args) {
		return nil, typeError("not all arguments converted during string formatting")
	}
	return b.String()
}

// pyEqual is Python's ==. It charges b for what it reads; a value nested too deeply (or
// containing itself) compares unequal and sets b's error.
func pyEqual(b *budget, x, y Value) bool {
	return equalAt(b, x, y, 0)
}

func equalAt(b *budget, x, y Value, depth int) bool {
	if depth > maxValueDepth {
		b.deep()
		return false
	}
	if _, ok := x.(Undefined); ok {
		_, ok2 := y.(Undefined)
		return ok2
	}
	ai, af, aF, aok := number(x)
	bi, bf, bF, bok := number(y)
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
	switch a := x.(type) {
	case nil:
		return y == nil
	case string:
		c, ok := y.(string)
		return ok && len(a) == len(c) && b.read(int64(len(a))) && a == c
	case List:
		c, ok := y.(List)
		return ok && seqEqual(b, a, c, depth)
	case Tuple:
		c, ok := y.(Tuple)
		return ok && seqEqual(b, a, c, depth)
	case *Dict:
		c, ok := y.(*Dict)
		if !ok || a.Len() != c.Len() {
			return false
		}
		if a == c {
			return true
		}
		if !b.read(mul(int64(a.Len()), dictBytes)) {
			return false
		}
		for i, k := range a.keys {
			v, ok := c.getB(b, k)
			if !ok || !equalAt(b, a.vals[i], v, depth+1) {
				return false
			}
		}
		return true
	}
	return x == y
}

func seqEqual(b *budget, x, y []Value, depth int) bool {
	if len(x) != len(y) {
		return false
	}
	if len(x) == 0 || &x[0] == &y[0] {
		return true // the same items: Python's identity shortcut makes this O(1) too
	}
	if !b.read(mul(int64(len(x)), itemBytes)) {
		return false
	}
	for i := range x {
		if !equalAt(b, x[i], y[i], depth+1) {
			return false
		}
	}
	return true
}

// pyCompare orders a and b as Python's < does, or fails with TypeError.
func pyCompare(b *budget, x, y Value) (int, error) {
	return compareAt(b, x, y, 0)
}

func compareAt(b *budget, x, y Value, depth int) (int, error) {
	if depth > maxValueDepth {
		return 0, b.deep()
	}
	for _, v := range [2]Value{x, y} {
		if u, ok := v.(Undefined); ok {
			return 0, u.err()
		}
	}
	if af, ok := toFloat(x); ok {
		if bf, ok := toFloat(y); ok {
			ai, aIsInt := toInt(x)
			bi, bIsInt := toInt(y)
			if aIsInt && bIsInt {
				return cmpOrdered(ai, bi), nil
			}
			return cmpOrdered(af, bf), nil
		}
	}
	switch a := x.(type) {
	case string:
		if c, ok := y.(string); ok {
			if !b.read(int64(min(len(a), len(c)))) {
				return 0, b.err
			}
			return strings.Compare(a, c), nil
		}
	case List:
		if c, ok := y.(List); ok {
			return seqCompare(b, a, c, depth)
		}
	case Tuple:
		if c, ok := y.(Tuple); ok {
			return seqCompare(b, a, c, depth)
		}
	}
	return 0, typeError("'<' not supported between instances of '%s' and '%s'", typeName(x), typeName(y))
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

func seqCompare(b *budget, x, y []Value, depth int) (int, error) {
	for i := 0; i < len(x) && i < len(y); i++ {
		if !b.read(itemBytes) {
			return 0, b.err
		}
		if equalAt(b, x[i], y[i], depth+1) {
			continue
		}
		if err := b.failed(); err != nil {
			return 0, err
		}
		return compareAt(b, x[i], y[i], depth+1)
	}
	return cmpOrdered(int64(len(x)), int64(len(y))), nil
}

func contains(b *budget, container, item Value) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, typeError("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		if !b.read(int64(len(c))) {
			return false, b.err
		}
		return strings.Contains(c, s), nil
	case List:
		return seqContains(b, c, item)
	case Tuple:
		return seqContains(b, c, item)
	case *Dict:
		if _, err := hashKey(item); err != nil {
			return false, err
		}
		_, ok := c.getB(b, item)
		return ok, b.failed()
	case Undefined:
		if c.unsafe {
			return false, c.err()
		}
		return false, nil
	}
	return false, typeError("argument of type '%s' is not iterable", typeName(container))
}

func seqContains(b *budget, items []Value, item Value) (bool, error) {
	for _, x := range items {
		if !b.read(itemBytes) {
			return false, b.err
		}
		if pyEqual(b, x, item) {
			return true, nil
		}
	}
	return false, b.failed()
}

func compare(b *budget, op string, x, y Value) (bool, error) {
	switch op {
	case "eq":
		return pyEqual(b, x, y), b.failed()
	case "ne":
		return !pyEqual(b, x, y), b.failed()
	case "in":
		return contains(b, y, x)
	case "notin":
		ok, err := contains(b, y, x)
		return !ok, err
	}
	c, err := pyCompare(b, x, y)
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
func getattr(b *budget, obj Value, name string) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, u.err()
	}
	if strings.HasPrefix(name, "__") {
		return Undefined{unsafe: true, hint: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, typeName(obj))}, nil
	}
	switch o := obj.(type) {
	case *Dict:
		if m, ok := method(b, obj, name); ok {
			return m, nil
		}
		if v, ok := o.getB(b, name); ok {
			return v, nil
		}
	case *Namespace:
		if v, ok := o.d.getB(b, name); ok {
			return v, nil
		}
	case *loopInfo:
		return o.attr(b, name), nil
	default:
		if m, ok := method(b, obj, name); ok {
			return m, nil
		}
	}
	return undefinedAttr(obj, name), nil
}

// getitem is jinja2's environment.getitem: item first, then (for string keys) attribute.
func getitem(b *budget, obj Value, key Value) (Value, error) {
	if u, ok := obj.(Undefined); ok {
		return nil, u.err()
	}
	switch o := obj.(type) {
	case *Dict:
		if _, err := hashKey(key); err == nil {
			if v, ok := o.getB(b, key); ok {
				return v, nil
			}
		}
	case List, Tuple, string:
		if k, ok := toInt(key); ok {
			return index(b, obj, k), nil
		}
	}
	if name, ok := key.(string); ok {
		return getattr(b, obj, name)
	}
	return Undefined{hint: fmt.Sprintf("'%s' has no attribute '%s'", objectName(obj), Str(key))}, nil
}

func index(b *budget, obj Value, k int64) Value {
	var n int64
	switch o := obj.(type) {
	case List:
		n = int64(len(o))
	case Tuple:
		n = int64(len(o))
	case string:
		if !b.read(int64(len(o))) { // counting and finding code points reads the string
			return Undefined{}
		}
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
	return runeAt(obj.(string), k)
}

// runeAt is s[k] for a code point index 0 <= k < runeLen(s), without converting all of s.
func runeAt(s string, k int64) string {
	for i, c := range s {
		if k == 0 {
			return s[i : i+utf8.RuneLen(c)]
		}
		k--
	}
	return ""
}

// sliceValue is obj[start:stop:step] with Python's index adjustment.
func sliceValue(b *budget, obj, startV, stopV, stepV Value) (Value, error) {
	var n int
	var items []Value
	var runes []rune
	switch o := obj.(type) {
	case List:
		items, n = o, len(o)
	case Tuple:
		items, n = o, len(o)
	case string:
		if err := b.alloc(mul(int64(len(o)), 4)); err != nil {
			return nil, err
		}
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
	count := rangeLen(start, stop, step) // at most n
	if err := b.alloc(mul(count, itemBytes)); err != nil {
		return nil, err
	}
	idx := make([]int64, 0, count)
	for k := int64(0); k < count; k++ {
		idx = append(idx, start+k*step)
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
