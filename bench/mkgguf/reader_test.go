package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// A minimal GGUF v3 reader written from the format's description, sharing no code with the
// writer: the tests read back what mkgguf wrote with it.

// ggufValue is one metadata value: its type code, the element type of an array, and the value
// (uint8 ... float64, bool, string, or a []any of them).
type ggufValue struct {
	typ, elem uint32
	v         any
}

type ggufTensor struct {
	name   string
	dims   []uint64 // innermost first
	typ    uint32
	offset uint64 // from the start of the data section
}

type ggufFile struct {
	version   uint32
	kvs       map[string]ggufValue
	keys      []string // in file order
	tensors   []ggufTensor
	alignment uint64
	dataStart uint64
	raw       []byte
}

// data returns a tensor's bytes, given its size.
func (f *ggufFile) data(t ggufTensor, size uint64) ([]byte, error) {
	lo := f.dataStart + t.offset
	if lo+size > uint64(len(f.raw)) {
		return nil, fmt.Errorf("tensor %s: bytes [%d, %d) past the end of the file (%d bytes)", t.name, lo, lo+size, len(f.raw))
	}
	return f.raw[lo : lo+size], nil
}

type ggufReader struct {
	b   []byte
	pos int
	err error
}

func (r *ggufReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.err = fmt.Errorf("truncated at byte %d (need %d more)", r.pos, n)
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *ggufReader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *ggufReader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *ggufReader) str() string {
	n := r.u64()
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("string of %d bytes at byte %d", n, r.pos)
		return ""
	}
	return string(r.take(int(n)))
}

// scalar reads one value of a non-array type.
func (r *ggufReader) scalar(typ uint32) any {
	switch typ {
	case 0:
		if s := r.take(1); s != nil {
			return s[0]
		}
	case 1:
		if s := r.take(1); s != nil {
			return int8(s[0])
		}
	case 2:
		if s := r.take(2); s != nil {
			return binary.LittleEndian.Uint16(s)
		}
	case 3:
		if s := r.take(2); s != nil {
			return int16(binary.LittleEndian.Uint16(s))
		}
	case 4:
		return r.u32()
	case 5:
		return int32(r.u32())
	case 6:
		return math.Float32frombits(r.u32())
	case 7:
		if s := r.take(1); s != nil {
			if s[0] > 1 {
				r.err = fmt.Errorf("bool byte %d at %d", s[0], r.pos-1)
			}
			return s[0] == 1
		}
	case 8:
		return r.str()
	case 10:
		return r.u64()
	case 11:
		return int64(r.u64())
	case 12:
		return math.Float64frombits(r.u64())
	default:
		r.err = fmt.Errorf("value type %d at byte %d", typ, r.pos)
	}
	return nil
}

func readGGUF(path string) (*ggufFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ggufReader{b: raw}
	if magic := string(r.take(4)); magic != "GGUF" {
		return nil, fmt.Errorf("magic %q", magic)
	}
	f := &ggufFile{kvs: map[string]ggufValue{}, raw: raw, alignment: 32}
	f.version = r.u32()
	nt, nkv := r.u64(), r.u64()
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		key := r.str()
		v := ggufValue{typ: r.u32()}
		if v.typ == 9 {
			v.elem = r.u32()
			n := r.u64()
			if n > uint64(len(raw)) {
				return nil, fmt.Errorf("key %s: array of %d", key, n)
			}
			arr := make([]any, 0, n)
			for j := uint64(0); j < n && r.err == nil; j++ {
				arr = append(arr, r.scalar(v.elem))
			}
			v.v = arr
		} else {
			v.v = r.scalar(v.typ)
		}
		if _, dup := f.kvs[key]; dup {
			return nil, fmt.Errorf("key %s twice", key)
		}
		f.kvs[key] = v
		f.keys = append(f.keys, key)
	}
	if a, ok := f.kvs["general.alignment"]; ok {
		f.alignment = uint64(a.v.(uint32))
	}
	for i := uint64(0); i < nt && r.err == nil; i++ {
		t := ggufTensor{name: r.str()}
		nd := r.u32()
		for j := uint32(0); j < nd && r.err == nil; j++ {
			t.dims = append(t.dims, r.u64())
		}
		t.typ = r.u32()
		t.offset = r.u64()
		f.tensors = append(f.tensors, t)
	}
	if r.err != nil {
		return nil, r.err
	}
	f.dataStart = (uint64(r.pos) + f.alignment - 1) / f.alignment * f.alignment
	for _, b := range raw[r.pos:min(uint64(len(raw)), f.dataStart)] {
		if b != 0 {
			return nil, fmt.Errorf("padding before the data section is not zero")
		}
	}
	return f, nil
}
