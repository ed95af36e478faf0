package gguf

import "fmt"

// ValueType is the type code of a metadata value (gguf_type).
type ValueType uint32

// The metadata value types of GGUF version 3.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// Value is a typed metadata value, made by one of the constructors below (the types llama.cpp's
// converter uses for the keys of a dense decoder; the zero Value is no value).
type Value struct {
	typ  ValueType
	elem ValueType // element type of an array
	v    any
}

// Uint32 is a u32 value (counts and lengths, token ids, the file type).
func Uint32(v uint32) Value { return Value{typ: TypeUint32, v: v} }

// Float32 is an f32 value (epsilons, the RoPE base).
func Float32(v float32) Value { return Value{typ: TypeFloat32, v: v} }

// Bool is a bool value, stored as one byte.
func Bool(v bool) Value { return Value{typ: TypeBool, v: v} }

// String is a string value.
func String(v string) Value { return Value{typ: TypeString, v: v} }

// Strings is an array of strings (tokens, merges, template names).
func Strings(v []string) Value { return Value{typ: TypeArray, elem: TypeString, v: v} }

// Int32s is an array of i32 (token types).
func Int32s(v []int32) Value { return Value{typ: TypeArray, elem: TypeInt32, v: v} }

// Type returns the value's type code, and for an array its element type.
func (v Value) Type() (typ, elem ValueType) { return v.typ, v.elem }

// Interface returns the Go value: uint32, float32, bool, string, []string or []int32.
func (v Value) Interface() any { return v.v }

func (v Value) encode(e *encoder) {
	e.u32(uint32(v.typ))
	switch x := v.v.(type) {
	case uint32:
		e.u32(x)
	case float32:
		e.f32(x)
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		e.str(x)
	case []string:
		e.u32(uint32(TypeString))
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []int32:
		e.u32(uint32(TypeInt32))
		e.u64(uint64(len(x)))
		for _, n := range x {
			e.u32(uint32(n))
		}
	default:
		if e.err == nil {
			e.err = fmt.Errorf("gguf: value of Go type %T", x)
		}
	}
}
