package blobfile

import (
	"encoding/binary"
	"fmt"
)

// FormatError describes malformed blob bytes at a byte offset.
type FormatError struct {
	Offset int64  // byte offset in the blob file
	Msg    string // what was expected
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("weight blob: offset %d: %s", e.Offset, e.Msg)
}

// Unwrap lets errors.Is(err, ErrFormat) match.
func (e *FormatError) Unwrap() error { return ErrFormat }

// File is a parsed blob file over its bytes (typically a slice of a memory-mapped bundle).
type File struct {
	data    []byte
	Count   int      // the header's record count
	Records []Record // every record found walking the file from offset 64
}

// Parse validates the header and walks every record: sentinel, known dtype, payload in bounds
// and at record offset + 64. It never allocates more than one Record per 128 input bytes.
func Parse(data []byte) (*File, error) {
	if len(data) < HeaderSize {
		return nil, &FormatError{0, fmt.Sprintf("file is %d bytes; a header needs %d", len(data), HeaderSize)}
	}
	count := int64(binary.LittleEndian.Uint32(data[0:]))
	if v := binary.LittleEndian.Uint32(data[4:]); v != Version {
		return nil, &FormatError{4, fmt.Sprintf("version %d; expected %d", v, Version)}
	}
	maxRecords := int64(len(data)-HeaderSize) / RecordSize
	if count > maxRecords {
		return nil, &FormatError{0, fmt.Sprintf("header claims %d records but the file can hold at most %d", count, maxRecords)}
	}
	f := &File{data: data, Count: int(count), Records: make([]Record, 0, count)}
	off := int64(HeaderSize)
	for i := int64(0); i < count; i++ {
		r, err := f.RecordAt(off)
		if err != nil {
			return nil, err
		}
		f.Records = append(f.Records, r)
		off = alignUp(r.DataOffset + r.Size)
	}
	return f, nil
}

// RecordAt reads the record whose metadata starts at off, the offset a MIL BLOBFILE names.
// It checks what the ANE compiler relies on: a 0xDEADBEEF sentinel, an absolute payload offset
// equal to off+64, and a payload inside the file.
func (f *File) RecordAt(off int64) (Record, error) {
	if off < HeaderSize || off%Align != 0 {
		return Record{}, &FormatError{off, fmt.Sprintf("record offset must be a multiple of %d and at least %d", Align, HeaderSize)}
	}
	if off+RecordSize > int64(len(f.data)) {
		return Record{}, &FormatError{off, fmt.Sprintf("record runs past the end of the %d-byte file", len(f.data))}
	}
	m := f.data[off : off+RecordSize]
	if s := binary.LittleEndian.Uint32(m[0:]); s != Sentinel {
		return Record{}, &FormatError{off, fmt.Sprintf("sentinel is %#08x; expected 0xDEADBEEF (offset does not point at a record)", s)}
	}
	r := Record{
		Offset:     off,
		DType:      DType(binary.LittleEndian.Uint32(m[4:])),
		Size:       int64(binary.LittleEndian.Uint64(m[8:])),
		DataOffset: int64(binary.LittleEndian.Uint64(m[16:])),
	}
	if r.DataOffset != off+RecordSize {
		return Record{}, &FormatError{off + 16, fmt.Sprintf("payload offset %d; expected %d (record offset + 64)", r.DataOffset, off+RecordSize)}
	}
	if r.Size < 0 || r.Size > int64(len(f.data))-r.DataOffset {
		return Record{}, &FormatError{off + 8, fmt.Sprintf("payload of %d bytes runs past the end of the %d-byte file", r.Size, len(f.data))}
	}
	return r, nil
}

// Payload returns the payload bytes of r (a sub-slice; no copy).
func (f *File) Payload(r Record) []byte { return f.data[r.DataOffset : r.DataOffset+r.Size] }
