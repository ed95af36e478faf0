// Package gguf writes GGUF version 3 files, the model format of llama.cpp, so that the
// benchmarks can hand llama.cpp the same weights an anepack bundle holds. It knows the container
// only (header, typed metadata, tensor descriptions, aligned data); which keys and tensor names
// a model needs is the caller's business (bench/mkgguf).
//
// Layout, all little-endian:
//
//	"GGUF", u32 version (3), u64 tensor count, u64 metadata count
//	metadata: string key, u32 value type, value            (per entry)
//	tensors:  string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset
//	padding to the alignment, then each tensor's data at its offset, padded likewise
//
// A string is a u64 byte count and the bytes (no terminator); an array is a u32 element type,
// a u64 count and the elements. ne lists a tensor's dimensions innermost first: a row-major
// [rows, cols] matrix has ne0 = cols, ne1 = rows. Offsets count from the start of the data
// section and are multiples of the alignment: general.alignment when the file sets it, else 32.
//
// It is used by the benchmark tools only; nothing in the product imports it.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Format constants.
const (
	// Magic opens every GGUF file.
	Magic = "GGUF"
	// Version is the format version written.
	Version = 3
	// DefaultAlignment is the data alignment of a file without general.alignment.
	DefaultAlignment = 32
	// AlignmentKey is the metadata key of a non-default alignment.
	AlignmentKey = "general.alignment"
	// MaxNameLen is the longest tensor name llama.cpp accepts (GGML_MAX_NAME - 1 bytes).
	MaxNameLen = 63
	// MaxDims is the most dimensions a tensor may have.
	MaxDims = 4
)

// TensorType is a tensor's element type (ggml_type).
type TensorType uint32

// The tensor types written.
const (
	F32  TensorType = 0
	F16  TensorType = 1
	BF16 TensorType = 30
)

// ElemSize returns the bytes of one element, or 0 for a type this package does not write.
func (t TensorType) ElemSize() int {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// String returns llama.cpp's name of the type.
func (t TensorType) String() string {
	switch t {
	case F32:
		return "F32"
	case F16:
		return "F16"
	case BF16:
		return "BF16"
	}
	return fmt.Sprintf("TensorType(%d)", uint32(t))
}

// Tensor describes one tensor and produces its data.
type Tensor struct {
	// Name is llama.cpp's name, e.g. "blk.0.attn_q.weight".
	Name string
	// Type is the element type.
	Type TensorType
	// Dims lists the dimensions innermost first (ne0 = the contiguous one).
	Dims []uint64
	// Write writes the tensor's data, exactly Size() bytes, to w.
	Write func(w io.Writer) error
}

// Elements returns the number of elements.
func (t *Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Size returns the bytes of the tensor's data.
func (t *Tensor) Size() uint64 { return t.Elements() * uint64(t.Type.ElemSize()) }

// File is a GGUF file to write: metadata in the order given, then the tensors in order.
type File struct {
	KVs     []KV
	Tensors []Tensor
	// Alignment of the tensor data; 0 means DefaultAlignment. Any other value is written as
	// general.alignment (so KVs must not hold that key) and must be a multiple of 8.
	Alignment uint32
}

func (f *File) alignment() uint64 {
	if f.Alignment == 0 {
		return DefaultAlignment
	}
	return uint64(f.Alignment)
}

// check refuses a file llama.cpp could not read back, before anything is written.
func (f *File) check() error {
	if a := f.alignment(); a%8 != 0 {
		return fmt.Errorf("gguf: alignment %d; expected a multiple of 8", a)
	}
	keys := map[string]bool{}
	for _, kv := range f.KVs {
		switch {
		case kv.Key == "":
			return errors.New("gguf: a metadata key is empty")
		case keys[kv.Key]:
			return fmt.Errorf("gguf: metadata key %q appears twice", kv.Key)
		case kv.Key == AlignmentKey:
			return fmt.Errorf("gguf: metadata key %q is set through File.Alignment", kv.Key)
		case kv.Value.v == nil:
			return fmt.Errorf("gguf: metadata key %q has no value", kv.Key)
		}
		keys[kv.Key] = true
	}
	names := map[string]bool{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		switch {
		case t.Name == "" || len(t.Name) > MaxNameLen:
			return fmt.Errorf("gguf: tensor %d: name %q; expected 1 to %d bytes", i, t.Name, MaxNameLen)
		case names[t.Name]:
			return fmt.Errorf("gguf: tensor %q appears twice", t.Name)
		case t.Type.ElemSize() == 0:
			return fmt.Errorf("gguf: tensor %q: type %v is not one this writer knows", t.Name, t.Type)
		case len(t.Dims) == 0 || len(t.Dims) > MaxDims:
			return fmt.Errorf("gguf: tensor %q: %d dimensions; expected 1 to %d", t.Name, len(t.Dims), MaxDims)
		case t.Write == nil:
			return fmt.Errorf("gguf: tensor %q has no data", t.Name)
		}
		for _, d := range t.Dims {
			if d == 0 {
				return fmt.Errorf("gguf: tensor %q: dimensions %v; expected every one > 0", t.Name, t.Dims)
			}
		}
		names[t.Name] = true
	}
	return nil
}

// WriteTo writes the file to w, streaming each tensor's data from its Write. It checks that
// every tensor writes exactly its size.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	e := &encoder{w: cw}
	e.raw([]byte(Magic))
	e.u32(Version)
	kvs := f.KVs
	if f.Alignment != 0 && f.Alignment != DefaultAlignment {
		kvs = append(kvs[:len(kvs):len(kvs)], KV{AlignmentKey, Uint32(f.Alignment)})
	}
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		kv.Value.encode(e)
	}
	align := f.alignment()
	var off uint64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off = pad(off+t.Size(), align)
	}
	e.zeros(pad(uint64(cw.n), align) - uint64(cw.n))
	if e.err != nil {
		return cw.n, e.err
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		start := cw.n
		if err := t.Write(cw); err != nil {
			return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if got := uint64(cw.n - start); got != t.Size() {
			return cw.n, fmt.Errorf("gguf: tensor %q wrote %d bytes; its type and dimensions make %d", t.Name, got, t.Size())
		}
		e.zeros(pad(t.Size(), align) - t.Size())
		if e.err != nil {
			return cw.n, e.err
		}
	}
	return cw.n, cw.w.(*bufio.Writer).Flush()
}

// pad rounds n up to a multiple of align.
func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes little-endian values and keeps the first error.
type encoder struct {
	w   io.Writer
	err error
	buf [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.raw(e.buf[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.raw(e.buf[:])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

func (e *encoder) zeros(n uint64) {
	var z [64]byte
	for n > 0 {
		k := min(n, uint64(len(z)))
		e.raw(z[:k])
		n -= k
	}
}

func (e *encoder) f32(v float32) { e.u32(math.Float32bits(v)) }
