package jinja

// Tests ("x is defined"), following jinja2/tests.py.

type testFunc func(r *renderer, v Value, args []Value, kw *Dict) (bool, error)

var tests map[string]testFunc

func simpleTest(f func(v Value) bool) testFunc {
	return func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) { return f(v), nil }
}

func cmpTest(op string) testFunc {
	return func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
		a, err := bindArgs(op, args, kw, 1, "other")
		if err != nil {
			return false, err
		}
		return compare(r.b, op, v, a[0])
	}
}

func init() {
	isInt := func(v Value) bool { _, ok := v.(int64); return ok }
	tests = map[string]testFunc{
		"defined":   simpleTest(func(v Value) bool { _, u := v.(Undefined); return !u }),
		"undefined": simpleTest(func(v Value) bool { _, u := v.(Undefined); return u }),
		"none":      simpleTest(func(v Value) bool { return v == nil }),
		"boolean":   simpleTest(func(v Value) bool { _, ok := v.(bool); return ok }),
		"false":     simpleTest(func(v Value) bool { b, ok := v.(bool); return ok && !b }),
		"true":      simpleTest(func(v Value) bool { b, ok := v.(bool); return ok && b }),
		"integer":   simpleTest(isInt),
		"float":     simpleTest(func(v Value) bool { _, ok := v.(float64); return ok }),
		"number":    simpleTest(func(v Value) bool { _, _, _, ok := number(v); return ok }),
		"string":    simpleTest(func(v Value) bool { _, ok := v.(string); return ok }),
		"mapping":   simpleTest(func(v Value) bool { _, ok := v.(*Dict); return ok }),
		"sequence": simpleTest(func(v Value) bool {
			switch v.(type) {
			case string, List, Tuple, *Dict, Undefined:
				return true
			}
			return false
		}),
		"iterable": simpleTest(func(v Value) bool {
			switch v.(type) {
			case string, List, Tuple, *Dict, Undefined:
				return true
			}
			return false
		}),
		"callable": simpleTest(func(v Value) bool {
			switch v.(type) {
			case *Func, *Macro:
				return true
			}
			return false
		}),
		"lower":   simpleTest(func(v Value) bool { s, ok := v.(string); return ok && pyIsX(s, "islower") }),
		"upper":   simpleTest(func(v Value) bool { s, ok := v.(string); return ok && pyIsX(s, "isupper") }),
		"escaped": simpleTest(func(v Value) bool { return false }),
		"odd": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			i, ok := toInt(v)
			if !ok {
				return false, typeError("odd requires an integer")
			}
			return i%2 != 0, nil
		},
		"even": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			i, ok := toInt(v)
			if !ok {
				return false, typeError("even requires an integer")
			}
			return i%2 == 0, nil
		},
		"divisibleby": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			a, err := bindArgs("divisibleby", args, kw, 1, "num")
			if err != nil {
				return false, err
			}
			m, err := binaryOp(r.b, "%", v, a[0])
			if err != nil {
				return false, err
			}
			return pyEqual(r.b, m, int64(0)), nil
		},
		"sameas": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			a, err := bindArgs("sameas", args, kw, 1, "other")
			if err != nil {
				return false, err
			}
			switch x := v.(type) {
			case nil, bool:
				return x == a[0], nil
			}
			return false, typeError("sameas is only supported for None, True and False")
		},
		"in": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			a, err := bindArgs("in", args, kw, 1, "seq")
			if err != nil {
				return false, err
			}
			return contains(r.b, a[0], v)
		},
		"filter": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			s, ok := v.(string)
			_, known := filters[s]
			return ok && known, nil
		},
		"test": func(r *renderer, v Value, args []Value, kw *Dict) (bool, error) {
			s, ok := v.(string)
			_, known := tests[s]
			return ok && known, nil
		},
	}
	for op, names := range map[string][]string{"eq": {"eq", "==", "equalto"}, "ne": {"ne", "!="},
		"gt": {"gt", ">", "greaterthan"}, "gteq": {">=", "ge"}, "lt": {"lt", "<", "lessthan"}, "lteq": {"<=", "le"}} {
		for _, n := range names {
			tests[n] = cmpTest(op)
		}
	}
}
