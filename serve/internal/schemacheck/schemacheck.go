// Package schemacheck validates JSON values against the JSON Schema subset the server's
// constrained decoding supports. It is for tests: an independent check, written from the JSON
// Schema specification on decoded values, of what the grammar's recognizer lets through.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decode decodes one JSON document, numbers as json.Number; trailing data is an error.
func Decode(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}

// Validate checks the JSON text against the schema (a JSON text too).
func Validate(schema, text []byte) error {
	doc, err := Decode(schema)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	v, err := Decode(text)
	if err != nil {
		return err
	}
	return Value(doc, doc, v)
}

// Value checks a decoded value v against schema, a part of the decoded schema document doc
// ($ref pointers resolve in doc).
func Value(doc, schema, v any) error {
	s, ok := schema.(map[string]any)
	if !ok {
		if schema == true {
			return nil
		}
		return fmt.Errorf("schema false")
	}
	if ref, ok := s["$ref"].(string); ok {
		target := doc
		if ref != "#" {
			for _, tok := range strings.Split(ref[2:], "/") {
				tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
				m, ok := target.(map[string]any)
				if !ok {
					return fmt.Errorf("$ref %q does not resolve", ref)
				}
				target = m[tok]
			}
		}
		return Value(doc, target, v)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := Value(doc, sub, v); err != nil {
				return err
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []error
		for _, sub := range alts {
			err := Value(doc, sub, v)
			if err == nil {
				errs = nil
				break
			}
			errs = append(errs, err)
		}
		if errs != nil {
			return fmt.Errorf("anyOf: %v", errs)
		}
	}
	if t, ok := s["type"]; ok {
		var names []string
		if n, ok := t.(string); ok {
			names = []string{n}
		} else {
			for _, x := range t.([]any) {
				names = append(names, x.(string))
			}
		}
		if !slices.ContainsFunc(names, func(n string) bool { return isType(v, n) }) {
			return fmt.Errorf("%v is not of type %v", v, names)
		}
	}
	if e, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
			return fmt.Errorf("%v not in enum %v", v, e)
		}
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%v is not const %v", v, c)
	}
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		if x, ok := s["maxLength"].(json.Number); ok && n > atoi(x) {
			return fmt.Errorf("%q longer than %v", v, x)
		}
		if x, ok := s["minLength"].(json.Number); ok && n < atoi(x) {
			return fmt.Errorf("%q shorter than %v", v, x)
		}
	case []any:
		if x, ok := s["maxItems"].(json.Number); ok && len(v) > atoi(x) {
			return fmt.Errorf("%d items > %v", len(v), x)
		}
		if x, ok := s["minItems"].(json.Number); ok && len(v) < atoi(x) {
			return fmt.Errorf("%d items < %v", len(v), x)
		}
		if it, ok := s["items"]; ok {
			for i, x := range v {
				if err := Value(doc, it, x); err != nil {
					return fmt.Errorf("[%d]: %w", i, err)
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := v[r.(string)]; !ok {
					return fmt.Errorf("missing required %q", r)
				}
			}
		}
		for k, x := range v {
			if ps, ok := props[k]; ok {
				if err := Value(doc, ps, x); err != nil {
					return fmt.Errorf(".%s: %w", k, err)
				}
				continue
			}
			if ap, ok := s["additionalProperties"]; ok {
				if err := Value(doc, ap, x); err != nil {
					return fmt.Errorf("additional .%s: %w", k, err)
				}
			}
		}
	}
	return nil
}

func isType(v any, t string) bool {
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

func atoi(n json.Number) int {
	f, _ := strconv.ParseFloat(string(n), 64)
	return int(f)
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, _ := strconv.ParseFloat(string(a), 64)
		y, _ := strconv.ParseFloat(string(bn), 64)
		return x == y
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, x := range a {
			if !equal(x, bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
