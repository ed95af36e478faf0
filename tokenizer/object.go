package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Object is a JSON object that keeps its keys in insertion order, as Python dicts do. Chat
// templates print tool schemas and tool-call arguments with tojson, so the order must survive;
// Go maps would sort it. Decoding JSON into an Object keeps the document order, nested objects
// become *Object, arrays []any and numbers json.Number (so 1 and 1.0 stay distinct, as in Python).
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an object with the given key, value pairs: NewObject("role", "user", ...).
// It panics if kv has odd length or a key is not a string (a programming error).
func NewObject(kv ...any) *Object {
	if len(kv)%2 != 0 {
		panic("tokenizer.NewObject: odd number of arguments")
	}
	o := &Object{}
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			panic(fmt.Sprintf("tokenizer.NewObject: key %v is not a string", kv[i]))
		}
		o.Set(k, kv[i+1])
	}
	return o
}

// ParseObject decodes a JSON object, keeping key order.
func ParseObject(data []byte) (*Object, error) {
	o := &Object{}
	if err := o.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return o, nil
}

// Set sets key to v; a new key goes last, an existing key keeps its position. It returns o.
func (o *Object) Set(key string, v any) *Object {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
	return o
}

// Get returns the value of key.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

// Keys returns the keys in order (the slice must not be modified).
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.Keys()) }

// MarshalJSON writes the object with its keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a JSON object, keeping key order (a repeated key keeps its first
// position and its last value, as Python's json module does).
func (o *Object) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after JSON object")
	}
	obj, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("expected a JSON object, got %T", v)
	}
	*o = *obj
	return nil
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &Object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				o.Set(k.(string), v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if o.vals == nil {
				o.vals = map[string]any{}
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
	}
	return t, nil
}
