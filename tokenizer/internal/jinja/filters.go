package jinja

import (
	"cmp"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Filters, following jinja2/filters.py (plus HF's tojson). Filters jinja2 has but this
// renderer does not are rejected when the template is parsed.

type filterFunc func(r *renderer, v Value, args []Value, kw *Dict) (Value, error)

var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":        fAbs,
		"attr":       fAttr,
		"capitalize": strFilter(pyCapitalize),
		"center":     fCenter,
		"count":      fLength,
		"d":          fDefault,
		"default":    fDefault,
		"dictsort":   fDictsort,
		"e":          fEscape,
		"escape":     fEscape,
		"first":      fFirst,
		"float":      fFloat,
		"format":     fFormat,
		"indent":     fIndent,
		"int":        fInt,
		"items":      fItems,
		"join":       fJoin,
		"last":       fLast,
		"length":     fLength,
		"list":       fList,
		"lower":      strFilter(pyLower),
		"map":        fMap,
		"max":        fMinMax(false),
		"min":        fMinMax(true),
		"reject":     fSelect(false, false),
		"rejectattr": fSelect(false, true),
		"replace":    fReplace,
		"reverse":    fReverse,
		"round":      fRound,
		"safe":       func(r *renderer, v Value, a []Value, kw *Dict) (Value, error) { return str(r.b, v) },
		"select":     fSelect(true, false),
		"selectattr": fSelect(true, true),
		"sort":       fSort,
		"string":     func(r *renderer, v Value, a []Value, kw *Dict) (Value, error) { return str(r.b, v) },
		"sum":        fSum,
		"title":      strFilter(jinjaTitle),
		"tojson":     func(r *renderer, v Value, a []Value, kw *Dict) (Value, error) { return tojson(r.b, v, a, kw) },
		"trim":       fTrim,
		"unique":     fUnique,
		"upper":      strFilter(pyUpper),
		"wordcount":  fWordcount,
	}
}

func (r *renderer) applyFilter(x *filterExpr, v Value, f *frame) (Value, error) {
	args, kw, err := r.evalArgs(&x.callArgs, f)
	if err != nil {
		return nil, err
	}
	if u, ok := v.(Undefined); ok && u.unsafe {
		return nil, u.err()
	}
	return filters[x.name](r, v, args, kw)
}

// strFilter is a filter mapping str(v) through fn, which at most triples its length (the
// longest Unicode case mappings).
func strFilter(fn func(string) string) filterFunc {
	return func(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
		if _, err := bindArgs("filter", args, kw, 0); err != nil {
			return nil, err
		}
		s, err := str(r.b, v)
		if err != nil {
			return nil, err
		}
		if err := r.b.alloc(mul(int64(len(s)), 3)); err != nil {
			return nil, err
		}
		return fn(s), nil
	}
}

// jinjaTitle is jinja2's do_title: words start after whitespace or one of -([{<.
func jinjaTitle(s string) string {
	var b strings.Builder
	start := true
	for _, c := range s {
		if start {
			titleRune(&b, c)
		} else {
			b.WriteString(pyLower(string(c)))
		}
		start = isSpace(c) || strings.ContainsRune("-([{<", c)
	}
	return b.String()
}

func length(b *budget, v Value) (int64, error) {
	switch x := v.(type) {
	case string:
		if !b.read(int64(len(x))) { // counting code points reads the string
			return 0, b.err
		}
		return int64(runeLen(x)), nil
	case List:
		return int64(len(x)), nil
	case Tuple:
		return int64(len(x)), nil
	case *Dict:
		return int64(x.Len()), nil
	case Undefined:
		return 0, nil
	case *Namespace:
		return int64(x.d.Len()), nil
	}
	return 0, typeError("object of type '%s' has no len()", typeName(v))
}

func fLength(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	return length(r.b, v)
}

func fAbs(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	i, f, isF, ok := number(v)
	switch {
	case !ok:
		return nil, typeError("bad operand type for abs(): '%s'", typeName(v))
	case isF:
		return math.Abs(f), nil
	case i < 0:
		return negate(i)
	}
	return i, nil
}

func fAttr(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("attr", args, kw, 1, "name")
	if err != nil {
		return nil, err
	}
	name, err := mustString(a[0], "attribute name")
	if err != nil {
		return nil, err
	}
	// Unlike obj.name in a template, the attr filter never falls back to item lookup.
	if u, ok := v.(Undefined); ok {
		return nil, u.err()
	}
	switch o := v.(type) {
	case *Namespace:
		if x, ok := o.d.getB(r.b, name); ok {
			return x, nil
		}
	case *loopInfo:
		return o.attr(r.b, name), nil
	default:
		if strings.HasPrefix(name, "__") {
			return Undefined{unsafe: true, hint: "access to attribute '" + name + "' is unsafe."}, nil
		}
		if m, ok := method(r.b, v, name); ok {
			return m, nil
		}
	}
	return undefinedAttr(v, name), nil
}

func fCenter(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("center", args, kw, 0, "width")
	if err != nil {
		return nil, err
	}
	w, err := optInt(a[0], 80)
	if err != nil {
		return nil, err
	}
	s, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	if !r.b.read(int64(len(s))) {
		return nil, r.b.err
	}
	n := int64(runeLen(s))
	if w <= n {
		return s, nil
	}
	pad := w - n
	if err := r.b.alloc(add(int64(len(s)), pad)); err != nil { // checked before padding
		return nil, err
	}
	left := pad / 2
	if pad%2 == 1 && w%2 == 1 { // Python's centering puts the odd space on the left then
		left++
	}
	return strings.Repeat(" ", int(left)) + s + strings.Repeat(" ", int(pad-left)), nil
}

func fDefault(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("default", args, kw, 0, "default_value", "boolean")
	if err != nil {
		return nil, err
	}
	def := a[0]
	if isMissing(def) {
		def = ""
	}
	_, undef := v.(Undefined)
	if undef || (!isMissing(a[1]) && Truthy(a[1]) && !Truthy(v)) {
		return def, nil
	}
	return v, nil
}

func fEscape(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	s, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	if err := r.b.alloc(mul(int64(len(s)), 5)); err != nil { // "&" becomes "&amp;"
		return nil, err
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s), nil
}

func fFirst(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func fLast(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return Undefined{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func fList(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	return copyItems(r.b, items)
}

func parsePyFloat(s string) (float64, bool) {
	t := strings.ReplaceAll(strings.TrimFunc(s, isSpace), "_", "")
	switch strings.ToLower(t) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), true
	case "-inf", "-infinity":
		return math.Inf(-1), true
	case "nan", "+nan", "-nan":
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil && !strings.ContainsAny(t, "xXpP")
}

func fFloat(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("float", args, kw, 0, "default")
	if err != nil {
		return nil, err
	}
	def := a[0]
	if isMissing(def) {
		def = 0.0
	}
	if f, ok := toFloat(v); ok {
		return f, nil
	}
	if s, ok := v.(string); ok {
		if err := r.b.alloc(int64(len(s))); err != nil { // parsing copies it
			return nil, err
		}
		if f, ok := parsePyFloat(s); ok {
			return f, nil
		}
	}
	return def, nil
}

func fInt(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("int", args, kw, 0, "default", "base")
	if err != nil {
		return nil, err
	}
	def := a[0]
	if isMissing(def) {
		def = int64(0)
	}
	base, err := optInt(a[1], 10)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		if err := r.b.alloc(mul(int64(len(x)), 2)); err != nil { // parsing copies it
			return nil, err
		}
		t := strings.ReplaceAll(strings.TrimFunc(x, isSpace), "_", "")
		neg := strings.HasPrefix(t, "-")
		u := strings.TrimLeft(t, "+-")
		if len(u) > 2 && u[0] == '0' {
			// Python's int(s, base) accepts the prefix matching base (and base 0 infers it).
			if p := map[byte]int64{'x': 16, 'o': 8, 'b': 2}[u[1]|0x20]; p != 0 && (base == p || base == 0) {
				u, base = u[2:], p
			}
		}
		if base == 0 {
			base = 10
		}
		if neg {
			u = "-" + u
		}
		if i, err := strconv.ParseInt(u, int(base), 64); err == nil && len(t) > 0 && (t[0] != '+' || len(t) > 1) {
			return i, nil
		}
		if f, ok := parsePyFloat(x); ok && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return int64(f), nil
		}
		return def, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return def, nil
		}
		return int64(x), nil
	}
	if i, _, _, ok := number(v); ok {
		return i, nil
	}
	return def, nil
}

func fFormat(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	if kw != nil && kw.Len() > 0 {
		if len(args) > 0 {
			return nil, &Error{Kind: "FilterArgumentError", Msg: "can't handle positional and keyword arguments at the same time"}
		}
		return nil, typeError("format filter with keyword arguments is not supported")
	}
	s, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	return percentFormat(r.b, s, Tuple(args))
}

func fIndent(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("indent", args, kw, 0, "width", "first", "blank")
	if err != nil {
		return nil, err
	}
	ind := "    "
	if !isMissing(a[0]) {
		if s, ok := a[0].(string); ok {
			ind = s
		} else {
			n, err := optInt(a[0], 4)
			if err != nil {
				return nil, err
			}
			if err := r.b.alloc(n); err != nil { // checked before the spaces are made
				return nil, err
			}
			ind = strings.Repeat(" ", int(max(n, 0)))
		}
	}
	text, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	linesV, err := strMethod(r.b, text+"\n", "splitlines")(nil, nil)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range linesV.(List) {
		lines = append(lines, l.(string))
	}
	// Every line gains at most one indent (and the joins a newline each): check that first.
	if err := r.b.alloc(add(int64(len(text)), mul(int64(len(lines)+1), int64(len(ind))+1))); err != nil {
		return nil, err
	}
	var out string
	if !isMissing(a[2]) && Truthy(a[2]) {
		out = strings.Join(lines, "\n"+ind)
	} else {
		out = lines[0]
		if len(lines) > 1 {
			rest := make([]string, len(lines)-1)
			for i, l := range lines[1:] {
				if l != "" {
					l = ind + l
				}
				rest[i] = l
			}
			out += "\n" + strings.Join(rest, "\n")
		}
	}
	if !isMissing(a[1]) && Truthy(a[1]) {
		out = ind + out
	}
	return out, nil
}

func fItems(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	switch x := v.(type) {
	case Undefined:
		return List{}, nil
	case *Dict:
		if err := r.b.alloc(mul(int64(x.Len()), 4*itemBytes)); err != nil { // the list and a pair per entry
			return nil, err
		}
		out := make(List, x.Len())
		for i, k := range x.keys {
			out[i] = Tuple{k, x.vals[i]}
		}
		return out, nil
	}
	return nil, typeError("Can only get item pairs from a mapping.")
}

// attrGetter resolves "a.b.0" style attribute paths the way jinja2's make_attrgetter does.
func attrGetter(b *budget, spec Value) func(Value) (Value, error) {
	var parts []Value
	if s, ok := spec.(string); ok {
		for _, p := range strings.Split(s, ".") {
			if n, err := strconv.ParseInt(p, 10, 64); err == nil {
				parts = append(parts, n)
			} else {
				parts = append(parts, p)
			}
		}
	} else {
		parts = []Value{spec}
	}
	return func(v Value) (Value, error) {
		for _, p := range parts {
			var err error
			if v, err = getitem(b, v, p); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

func fJoin(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("join", args, kw, 0, "d", "attribute")
	if err != nil {
		return nil, err
	}
	sep := ""
	if !isMissing(a[0]) {
		if sep, err = str(r.b, a[0]); err != nil {
			return nil, err
		}
	}
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	if err := r.b.alloc(mul(int64(len(items)), 16)); err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		if !isMissing(a[1]) && a[1] != nil {
			if it, err = attrGetter(r.b, a[1])(it); err != nil {
				return nil, err
			}
		}
		if parts[i], err = str(r.b, it); err != nil {
			return nil, err
		}
	}
	return join(r.b, parts, sep)
}

func fMap(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	var fn func(Value) (Value, error)
	if len(args) == 0 && kw != nil {
		attr, ok := kw.Get("attribute")
		if !ok {
			return nil, typeError("map() requires a filter name or attribute=")
		}
		def, hasDef := kw.Get("default")
		get := attrGetter(r.b, attr)
		fn = func(it Value) (Value, error) {
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			if _, undef := x.(Undefined); undef && hasDef {
				return def, nil
			}
			return x, nil
		}
	} else {
		if len(args) == 0 {
			return nil, typeError("map() requires a filter name or attribute=")
		}
		name, ok := args[0].(string)
		flt, known := filters[name]
		if !ok || !known {
			return nil, &Error{Kind: "TemplateRuntimeError", Msg: "No filter named '" + truncStr(args[0]) + "'."}
		}
		rest := args[1:]
		fn = func(it Value) (Value, error) { return flt(r, it, rest, kw) }
	}
	if err := r.b.alloc(mul(int64(len(items)), itemBytes)); err != nil {
		return nil, err
	}
	out := make(List, 0, len(items))
	for _, it := range items {
		x, err := fn(it)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// sortKey prepares a value for comparison: attribute lookup and optional case folding.
func sortKey(b *budget, attr Value, caseSensitive bool) func(Value) (Value, error) {
	return func(v Value) (Value, error) {
		if attr != nil && !isMissing(attr) {
			var err error
			if v, err = attrGetter(b, attr)(v); err != nil {
				return nil, err
			}
		}
		if s, ok := v.(string); ok && !caseSensitive {
			if err := b.alloc(mul(int64(len(s)), 3)); err != nil {
				return nil, err
			}
			return pyLower(s), nil
		}
		return v, nil
	}
}

func sortValues(b *budget, items []Value, key func(Value) (Value, error), reverse bool) ([]Value, error) {
	if err := b.alloc(mul(int64(len(items)), 3*itemBytes)); err != nil { // keys, order, result
		return nil, err
	}
	keys := make([]Value, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var cmpErr error
	sort.SliceStable(idx, func(i, j int) bool {
		if cmpErr != nil || !b.read(itemBytes) {
			cmpErr = cmp.Or(cmpErr, b.err)
			return false
		}
		c, err := pyCompare(b, keys[idx[i]], keys[idx[j]])
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	if cmpErr != nil {
		return nil, cmpErr
	}
	out := make([]Value, len(items))
	for i, k := range idx {
		out[i] = items[k]
	}
	return out, nil
}

func fSort(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("sort", args, kw, 0, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	out, err := sortValues(r.b, items, sortKey(r.b, a[2], !isMissing(a[1]) && Truthy(a[1])), !isMissing(a[0]) && Truthy(a[0]))
	return List(out), err
}

func fDictsort(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("dictsort", args, kw, 0, "case_sensitive", "by", "reverse")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, typeError("dictsort requires a mapping")
	}
	pos := int64(0)
	if !isMissing(a[1]) {
		switch a[1] {
		case "key":
		case "value":
			pos = 1
		default:
			return nil, &Error{Kind: "FilterArgumentError", Msg: "You can only sort by either 'key' or 'value'"}
		}
	}
	items, err := fItems(r, d, nil, nil)
	if err != nil {
		return nil, err
	}
	out, err := sortValues(r.b, items.(List), sortKey(r.b, pos, !isMissing(a[0]) && Truthy(a[0])), !isMissing(a[2]) && Truthy(a[2]))
	return List(out), err
}

func fUnique(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("unique", args, kw, 0, "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	key := sortKey(r.b, a[1], !isMissing(a[0]) && Truthy(a[0]))
	if err := r.b.alloc(mul(int64(len(items)), dictBytes+itemBytes)); err != nil {
		return nil, err
	}
	seen := NewDict()
	out := List{}
	for _, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		if _, dup := seen.getB(r.b, k); dup {
			continue
		}
		if err := seen.setB(r.b, k, true); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

func fMinMax(isMin bool) filterFunc {
	return func(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
		a, err := bindArgs("min", args, kw, 0, "case_sensitive", "attribute")
		if err != nil {
			return nil, err
		}
		items, err := iterate(r.b, v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined{hint: "No aggregated item, sequence was empty."}, nil
		}
		key := sortKey(r.b, a[1], !isMissing(a[0]) && Truthy(a[0]))
		best := items[0]
		bk, err := key(best)
		if err != nil {
			return nil, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return nil, err
			}
			c, err := pyCompare(r.b, k, bk)
			if err != nil {
				return nil, err
			}
			if (isMin && c < 0) || (!isMin && c > 0) {
				best, bk = it, k
			}
		}
		return best, nil
	}
}

func fSelect(keep, byAttr bool) filterFunc {
	return func(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
		items, err := iterate(r.b, v)
		if err != nil {
			return nil, err
		}
		get := func(x Value) (Value, error) { return x, nil }
		if byAttr {
			if len(args) == 0 {
				return nil, typeError("missing attribute for selectattr/rejectattr")
			}
			get = attrGetter(r.b, args[0])
			args = args[1:]
		}
		test := func(x Value) (bool, error) { return Truthy(x), nil }
		if len(args) > 0 {
			name, ok := args[0].(string)
			t, known := tests[name]
			if !ok || !known {
				return nil, &Error{Kind: "TemplateRuntimeError", Msg: "No test named '" + truncStr(args[0]) + "'."}
			}
			rest := args[1:]
			test = func(x Value) (bool, error) { return t(r, x, rest, kw) }
		}
		out := List{}
		for _, it := range items {
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			ok, err := test(x)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				if err := r.b.grow(mul(int64(len(out)+1), itemBytes), itemBytes); err != nil {
					return nil, err
				}
				out = append(out, it)
			}
		}
		return out, nil
	}
}

func fReplace(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("replace", args, kw, 2, "old", "new", "count")
	if err != nil {
		return nil, err
	}
	n, err := optInt(a[2], -1)
	if err != nil {
		return nil, err
	}
	var s [3]string
	for i, x := range [3]Value{v, a[0], a[1]} {
		if s[i], err = str(r.b, x); err != nil {
			return nil, err
		}
	}
	if !r.b.read(int64(len(s[0]))) { // counting the matches
		return nil, r.b.err
	}
	return replace(r.b, s[0], s[1], s[2], n)
}

func fReverse(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	if s, ok := v.(string); ok {
		if err := r.b.alloc(mul(int64(len(s)), 5)); err != nil { // the runes and the result
			return nil, err
		}
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return string(rs), nil
	}
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	if err := r.b.alloc(mul(int64(len(items)), itemBytes)); err != nil {
		return nil, err
	}
	out := make(List, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out, nil
}

// maxRoundDigits is beyond the last digit any float64 has (5e-324 has 324 decimals).
const maxRoundDigits = 400

func fRound(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("round", args, kw, 0, "precision", "method")
	if err != nil {
		return nil, err
	}
	prec, err := optInt(a[0], 0)
	if err != nil {
		return nil, err
	}
	f, ok := toFloat(v)
	if !ok {
		return nil, typeError("round requires a number")
	}
	m := "common"
	if !isMissing(a[1]) {
		m, _ = a[1].(string)
	}
	if prec > maxRoundDigits {
		// A float64 has no digits this far out: rounding there changes nothing (Python agrees),
		// and formatting that many digits would allocate without limit.
		if m == "common" || m == "ceil" || m == "floor" {
			return f, nil
		}
	}
	p := math.Pow(10, float64(prec))
	switch m {
	case "common":
		// Python's round-half-even on the decimal value.
		s := strconv.FormatFloat(f, 'f', int(max(prec, 0)), 64)
		g, _ := strconv.ParseFloat(s, 64)
		if prec < 0 {
			g = math.RoundToEven(f*p) / p
		}
		return g, nil
	case "ceil":
		return math.Ceil(f*p) / p, nil
	case "floor":
		return math.Floor(f*p) / p, nil
	}
	return nil, &Error{Kind: "FilterArgumentError", Msg: "method must be common, ceil or floor"}
}

func fSum(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("sum", args, kw, 0, "attribute", "start")
	if err != nil {
		return nil, err
	}
	items, err := iterate(r.b, v)
	if err != nil {
		return nil, err
	}
	var total Value = int64(0)
	if !isMissing(a[1]) {
		total = a[1]
	}
	for _, it := range items {
		if !isMissing(a[0]) && a[0] != nil {
			if it, err = attrGetter(r.b, a[0])(it); err != nil {
				return nil, err
			}
		}
		if total, err = binaryOp(r.b, "+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func fTrim(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	a, err := bindArgs("trim", args, kw, 0, "chars")
	if err != nil {
		return nil, err
	}
	chars, err := optString(a[0], "trim")
	if err != nil {
		return nil, err
	}
	s, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	if !r.b.read(mul(int64(len(s)), int64(max(len(ptrOr(chars, "")), 1)))) { // each rune against chars
		return nil, r.b.err
	}
	return pyStripSet(s, chars, true, true), nil
}

func ptrOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func fWordcount(r *renderer, v Value, args []Value, kw *Dict) (Value, error) {
	s, err := str(r.b, v)
	if err != nil {
		return nil, err
	}
	if !r.b.read(int64(len(s))) {
		return nil, r.b.err
	}
	n := int64(0)
	in := false
	for _, c := range s {
		w := c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.IsNumber(c) || unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Mc, c)
		if w && !in {
			n++
		}
		in = w
	}
	return n, nil
}
