package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseJSON decodes JSON the way Python's json.loads does for templates: objects become *Dict
// with keys in document order, integers int64, other numbers float64, arrays List.
func ParseJSON(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting ParseJSON follows, as encoding/json's Unmarshal does (its
// limit is 10000; templates need far less), so a hostile request cannot exhaust the stack.
const maxJSONDepth = maxValueDepth

func decodeJSON(dec *json.Decoder, depth int) (Value, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested more than %d levels deep", maxJSONDepth)
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				_ = d.Set(kt.(string), v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			l := List{}
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
	case json.Number:
		return NumberValue(string(x))
	case string, bool, nil:
		return x, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}

// NumberValue converts a JSON number literal: int64 when it has no fraction or exponent (as
// Python's json module gives int), float64 otherwise.
func NumberValue(s string) (Value, error) {
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("integer %s does not fit in 64 bits", s)
		}
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %v", s, err)
	}
	return f, nil
}
