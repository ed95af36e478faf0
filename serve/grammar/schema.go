package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SchemaError is a schema the compiler refuses: Keyword is the keyword at fault and Path the
// JSON pointer of the subschema that holds it ("" for the root).
type SchemaError struct {
	Path, Keyword, Msg string
}

// Error says where in the schema the problem is and what it is.
func (e *SchemaError) Error() string {
	at := "the schema"
	if e.Path != "" {
		at = "the schema at " + e.Path
	}
	if e.Keyword == "" {
		return at + ": " + e.Msg
	}
	return fmt.Sprintf("%s: %q %s", at, e.Keyword, e.Msg)
}

// annotations are keywords that do not constrain values; they are accepted and ignored.
var annotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true,
}

// supported are the constraint keywords the compiler implements.
var supported = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "enum": true, "const": true,
	"anyOf": true, "allOf": true, "minLength": true, "maxLength": true, "$ref": true,
}

// maxSchemaDepth bounds the nesting of subschemas the compiler descends.
const maxSchemaDepth = 64

// maxBound bounds minLength, maxLength, minItems and maxItems.
const maxBound = 1 << 20

// Schema compiles a JSON Schema document into a node. The subset:
//
//   - type (a name or a list): object, array, string, number, integer, boolean, null;
//     without type, any value, with the keywords of each type applying to that type;
//   - object: properties, required, additionalProperties (true, false or a schema; absent means
//     true, as the specification says). Properties come in any order, each once. A required
//     name missing from properties is an additional property that must be present;
//   - array: items (one schema), minItems, maxItems;
//   - string: minLength, maxLength (in characters, as JSON Schema counts them);
//   - enum and const (with type at most beside them): the values as encoding/json writes them;
//   - anyOf; allOf with one schema; $ref to a JSON pointer in the same document ("#",
//     "#/$defs/name", "#/definitions/name", "#/properties/..."), recursion included;
//   - annotations (title, description, default, examples, $schema, $id, $comment, deprecated,
//     readOnly, writeOnly, $defs, definitions) and x- extensions are ignored.
//
// Anything else (minimum, pattern, format, oneOf, ...) is refused with a *SchemaError naming the
// keyword, rather than ignored: the output would otherwise not be guaranteed to validate.
func (b *Builder) Schema(raw []byte) (Ref, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return 0, &SchemaError{Msg: "is not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return 0, &SchemaError{Msg: "has data after its JSON value"}
	}
	c := &compiler{b: b, doc: doc, refs: map[string]int32{}}
	r, err := c.compile(doc, "", 0)
	if err == nil {
		err = b.err
	}
	if err != nil {
		return 0, err
	}
	return Ref(r), nil
}

type compiler struct {
	b    *Builder
	doc  any
	refs map[string]int32 // JSON pointer -> its node (a kPending placeholder while compiling)
}

func (c *compiler) errf(path, kw, format string, args ...any) error {
	return &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

func (c *compiler) compile(v any, path string, depth int) (int32, error) {
	if depth > maxSchemaDepth {
		return 0, c.errf(path, "", "is nested more than %d levels deep", maxSchemaDepth)
	}
	if c.b.err != nil {
		return 0, c.b.err
	}
	switch s := v.(type) {
	case bool:
		if s {
			return c.b.g.anyValue, nil
		}
		return int32(c.b.AnyOf()), nil // false: nothing matches
	case map[string]any:
		return c.object(s, path, depth)
	}
	return 0, c.errf(path, "", "must be an object or a boolean, not %s", jsonType(v))
}

func (c *compiler) object(s map[string]any, path string, depth int) (int32, error) {
	keys := make([]string, 0, len(s))
	constraints := 0
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case annotations[k] || strings.HasPrefix(k, "x-"):
		case supported[k]:
			constraints++
		default:
			return 0, c.errf(path, k, "is not supported (supported: type, properties, required, additionalProperties, items, minItems, maxItems, enum, const, anyOf, allOf of one schema, minLength, maxLength, $ref)")
		}
	}
	alone := func(kw string, allowType bool) error {
		for _, k := range keys {
			if k == kw || !supported[k] || (allowType && k == "type") {
				continue
			}
			return c.errf(path, k, "cannot be combined with %q here", kw)
		}
		return nil
	}
	if ref, ok := s["$ref"]; ok {
		if err := alone("$ref", false); err != nil {
			return 0, err
		}
		return c.ref(ref, path, depth)
	}
	if all, ok := s["allOf"]; ok {
		list, ok := all.([]any)
		if !ok || len(list) != 1 {
			return 0, c.errf(path, "allOf", "is supported with exactly one schema")
		}
		if err := alone("allOf", false); err != nil {
			return 0, err
		}
		return c.compile(list[0], path+"/allOf/0", depth+1)
	}
	if alt, ok := s["anyOf"]; ok {
		list, ok := alt.([]any)
		if !ok || len(list) == 0 {
			return 0, c.errf(path, "anyOf", "must be a non-empty array of schemas")
		}
		if err := alone("anyOf", false); err != nil {
			return 0, err
		}
		alts := make([]Ref, len(list))
		for i, sub := range list {
			r, err := c.compile(sub, fmt.Sprintf("%s/anyOf/%d", path, i), depth+1)
			if err != nil {
				return 0, err
			}
			alts[i] = Ref(r)
		}
		return int32(c.b.AnyOf(alts...)), nil
	}
	types, err := c.types(s, path)
	if err != nil {
		return 0, err
	}
	_, hasEnum := s["enum"]
	_, hasConst := s["const"]
	if hasEnum || hasConst {
		kw := "enum"
		if hasConst {
			kw = "const"
		}
		if hasEnum && hasConst {
			return 0, c.errf(path, "const", "cannot be combined with \"enum\" here")
		}
		if err := alone(kw, true); err != nil {
			return 0, err
		}
		return c.literals(s, kw, types, path)
	}
	if constraints == 0 && types == nil {
		return c.b.g.anyValue, nil
	}
	if types == nil {
		types = []string{"object", "array", "string", "number", "boolean", "null"}
	}
	alts := make([]Ref, 0, len(types))
	for _, t := range types {
		r, err := c.typed(s, t, path, depth)
		if err != nil {
			return 0, err
		}
		alts = append(alts, Ref(r))
	}
	if len(alts) == 1 {
		return int32(alts[0]), nil
	}
	return int32(c.b.AnyOf(alts...)), nil
}

// types returns the names in "type" (nil when absent).
func (c *compiler) types(s map[string]any, path string) ([]string, error) {
	t, ok := s["type"]
	if !ok {
		return nil, nil
	}
	var names []string
	switch t := t.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			n, ok := x.(string)
			if !ok {
				return nil, c.errf(path, "type", "must be a type name or an array of type names")
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			return nil, c.errf(path, "type", "is an empty array")
		}
	default:
		return nil, c.errf(path, "type", "must be a type name or an array of type names")
	}
	for _, n := range names {
		switch n {
		case "object", "array", "string", "number", "integer", "boolean", "null":
		default:
			return nil, c.errf(path, "type", "names %q; expected object, array, string, number, integer, boolean or null", n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func (c *compiler) typed(s map[string]any, t, path string, depth int) (int32, error) {
	b := c.b
	switch t {
	case "string":
		minLen, err := c.bound(s, "minLength", path, 0)
		if err != nil {
			return 0, err
		}
		maxLen, err := c.bound(s, "maxLength", path, -1)
		if err != nil {
			return 0, err
		}
		return b.add(node{kind: kString, minLen: minLen, maxLen: maxLen}), nil
	case "number", "integer":
		return b.add(node{kind: kNumber, integer: t == "integer"}), nil
	case "boolean":
		return int32(b.Literal("false", "true")), nil
	case "null":
		return int32(b.Literal("null")), nil
	case "array":
		minItems, err := c.bound(s, "minItems", path, 0)
		if err != nil {
			return 0, err
		}
		maxItems, err := c.bound(s, "maxItems", path, -1)
		if err != nil {
			return 0, err
		}
		items := b.g.anyValue
		if it, ok := s["items"]; ok {
			if _, tuple := it.([]any); tuple {
				return 0, c.errf(path, "items", "as an array of schemas (tuples) is not supported; give one schema")
			}
			if items, err = c.compile(it, path+"/items", depth+1); err != nil {
				return 0, err
			}
		}
		return b.add(node{kind: kArray, items: items, minItems: minItems, maxItems: maxItems}), nil
	}
	return c.objectType(s, path, depth)
}

func (c *compiler) objectType(s map[string]any, path string, depth int) (int32, error) {
	var addl *Ref
	switch a := s["additionalProperties"].(type) {
	case nil:
		if _, set := s["additionalProperties"]; set {
			return 0, c.errf(path, "additionalProperties", "must be a boolean or a schema")
		}
		free := Ref(c.b.g.anyValue)
		addl = &free
	case bool:
		if a {
			free := Ref(c.b.g.anyValue)
			addl = &free
		}
	default:
		r, err := c.compile(a, path+"/additionalProperties", depth+1)
		if err != nil {
			return 0, err
		}
		ar := Ref(r)
		addl = &ar
	}
	var props []Property
	index := map[string]int{}
	if p, ok := s["properties"]; ok {
		pm, ok := p.(map[string]any)
		if !ok {
			return 0, c.errf(path, "properties", "must be an object of schemas")
		}
		names := make([]string, 0, len(pm))
		for n := range pm {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			r, err := c.compile(pm[n], path+"/properties/"+escapePointer(n), depth+1)
			if err != nil {
				return 0, err
			}
			index[n] = len(props)
			props = append(props, Property{Name: n, Value: Ref(r)})
		}
	}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return 0, c.errf(path, "required", "must be an array of property names")
		}
		for _, x := range list {
			n, ok := x.(string)
			if !ok {
				return 0, c.errf(path, "required", "must be an array of property names")
			}
			i, declared := index[n]
			if !declared {
				// Required but not declared: an additional property that must be given (or,
				// with additionalProperties false, one that can never be: unsatisfiable).
				v := c.b.AnyOf()
				if addl != nil {
					v = *addl
				}
				i = len(props)
				index[n] = i
				props = append(props, Property{Name: n, Value: v})
			}
			props[i].Required = true
		}
	}
	if len(props) > MaxProperties {
		return 0, c.errf(path, "properties", "declares %d properties; at most %d are supported", len(props), MaxProperties)
	}
	return int32(c.b.Object(props, addl)), nil
}

// bound reads a non-negative integer keyword, or returns def when it is absent.
func (c *compiler) bound(s map[string]any, kw, path string, def int32) (int32, error) {
	v, ok := s[kw]
	if !ok {
		return def, nil
	}
	n, isNum := v.(json.Number)
	f, err := strconv.ParseFloat(string(n), 64)
	if !isNum || err != nil || f < 0 || f != math.Trunc(f) {
		return 0, c.errf(path, kw, "must be a non-negative integer")
	}
	if f > maxBound {
		return 0, c.errf(path, kw, "is %v; at most %d is supported", f, maxBound)
	}
	return int32(f), nil
}

// literals compiles enum or const: the values that also match type, as JSON texts.
func (c *compiler) literals(s map[string]any, kw string, types []string, path string) (int32, error) {
	var vals []any
	if kw == "const" {
		vals = []any{s["const"]}
	} else {
		list, ok := s["enum"].([]any)
		if !ok {
			return 0, c.errf(path, "enum", "must be an array of values")
		}
		vals = list
	}
	if len(vals) > MaxLiterals {
		return 0, c.errf(path, kw, "has %d values; at most %d are supported", len(vals), MaxLiterals)
	}
	var texts []string
	for _, v := range vals {
		if types != nil && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return 0, c.errf(path, kw, "holds a value that cannot be written as JSON: %v", err)
		}
		texts = append(texts, strings.TrimSuffix(buf.String(), "\n"))
	}
	return int32(c.b.Literal(texts...)), nil
}

// hasType reports whether a decoded JSON value (numbers as json.Number) is of a JSON Schema type.
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		if t == "number" {
			return true
		}
		f, err := strconv.ParseFloat(string(v), 64)
		return t == "integer" && err == nil && f == math.Trunc(f)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}

// ref compiles a $ref: a JSON pointer into the same document. A placeholder node is made first,
// so recursive references close a cycle instead of recursing without end.
func (c *compiler) ref(v any, path string, depth int) (int32, error) {
	ptr, ok := v.(string)
	if !ok {
		return 0, c.errf(path, "$ref", "must be a string")
	}
	if n, ok := c.refs[ptr]; ok {
		return n, nil
	}
	if ptr != "#" && !strings.HasPrefix(ptr, "#/") {
		return 0, c.errf(path, "$ref", "is %q; only references within the schema (\"#/...\") are supported", ptr)
	}
	target := c.doc
	if ptr != "#" {
		for _, tok := range strings.Split(ptr[2:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := target.(map[string]any)
			if !ok {
				return 0, c.errf(path, "$ref", "%q does not point at a schema", ptr)
			}
			if target, ok = m[tok]; !ok {
				return 0, c.errf(path, "$ref", "%q does not point at a schema", ptr)
			}
		}
	}
	place := c.b.add(node{kind: kPending})
	c.refs[ptr] = place
	r, err := c.compile(target, ptr[1:], depth+1)
	if err != nil {
		return 0, err
	}
	if c.b.g.nodes[r].kind == kPending {
		return 0, c.errf(path, "$ref", "%q refers back to itself without a value in between", ptr)
	}
	c.b.g.nodes[place] = c.b.g.nodes[r]
	return place, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
