package blobfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sizes and constants of the format.
const (
	HeaderSize = 64         // file header
	RecordSize = 64         // per-record metadata
	Align      = 64         // records and payloads start on 64-byte boundaries
	Version    = 2          // the only version written and accepted
	Sentinel   = 0xDEADBEEF // first word of every record
)

// DType is a MIL blob dtype code (coremltools BlobDataType.hpp).
type DType uint32

// The dtype codes. Only FP16, FP32, Int8 and UInt8 are produced by anepack today.
const (
	FP16   DType = 1
	FP32   DType = 2
	UInt8  DType = 3
	Int8   DType = 4
	BF16   DType = 5
	Int16  DType = 6
	UInt16 DType = 7
	Int4   DType = 8
	UInt4  DType = 11
	Int32  DType = 14
	UInt32 DType = 15
)

// String returns the MIL type name of the code, e.g. "fp16".
func (d DType) String() string {
	switch d {
	case FP16:
		return "fp16"
	case FP32:
		return "fp32"
	case UInt8:
		return "uint8"
	case Int8:
		return "int8"
	case BF16:
		return "bf16"
	case Int16:
		return "int16"
	case UInt16:
		return "uint16"
	case Int4:
		return "int4"
	case UInt4:
		return "uint4"
	case Int32:
		return "int32"
	case UInt32:
		return "uint32"
	}
	return fmt.Sprintf("dtype(%d)", uint32(d))
}

// ErrFormat is wrapped by every error about malformed blob bytes.
var ErrFormat = errors.New("malformed weight blob")

// Record is one tensor in a blob file.
type Record struct {
	Offset     int64 // offset of the 64-byte record: what BLOBFILE(offset = ...) names
	DType      DType
	Size       int64 // payload bytes
	DataOffset int64 // absolute payload offset (Offset + 64)
}

// Entry is what a writer needs to know about a tensor before writing it.
type Entry struct {
	DType DType
	Size  int64 // payload bytes
}

func alignUp(n int64) int64 { return (n + Align - 1) &^ (Align - 1) }

// Layout returns the records a file holding entries will have, in order, and the file size.
// The last payload is padded to a 64-byte boundary too, so files can be concatenated safely.
func Layout(entries []Entry) ([]Record, int64) {
	recs := make([]Record, len(entries))
	off := int64(HeaderSize)
	for i, e := range entries {
		recs[i] = Record{Offset: off, DType: e.DType, Size: e.Size, DataOffset: off + RecordSize}
		off = alignUp(off + RecordSize + e.Size)
	}
	return recs, off
}

// AppendHeader appends the 64-byte file header for count records.
func AppendHeader(b []byte, count int) []byte {
	var h [HeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(count))
	binary.LittleEndian.PutUint32(h[4:], Version)
	return append(b, h[:]...)
}

// AppendRecord appends the 64-byte metadata record of r.
func AppendRecord(b []byte, r Record) []byte {
	var m [RecordSize]byte
	binary.LittleEndian.PutUint32(m[0:], Sentinel)
	binary.LittleEndian.PutUint32(m[4:], uint32(r.DType))
	binary.LittleEndian.PutUint64(m[8:], uint64(r.Size))
	binary.LittleEndian.PutUint64(m[16:], uint64(r.DataOffset))
	return append(b, m[:]...)
}

// Writer streams a blob file: the header and each record are written by Next, the caller then
// writes exactly the entry's payload bytes, and Close pads the last payload.
type Writer struct {
	w       io.Writer
	recs    []Record
	next    int   // index of the record Next will start
	written int64 // bytes written to w so far
	want    int64 // file offset where the current payload ends
	err     error
}

// NewWriter writes the header for entries to w and returns a Writer positioned before the
// first record.
func NewWriter(w io.Writer, entries []Entry) (*Writer, error) {
	recs, _ := Layout(entries)
	bw := &Writer{w: w, recs: recs}
	bw.write(AppendHeader(nil, len(entries)))
	bw.want = bw.written
	return bw, bw.err
}

// Records returns the layout of the file being written.
func (w *Writer) Records() []Record { return w.recs }

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.written += int64(n)
	w.err = err
}

var zeros [Align]byte

// Next finishes the previous payload (checking its size), writes the padding and the next
// record's metadata, and returns that record. The caller then writes Size payload bytes to Write.
func (w *Writer) Next() (Record, error) {
	if err := w.finishPayload(); err != nil {
		return Record{}, err
	}
	if w.next >= len(w.recs) {
		return Record{}, fmt.Errorf("blobfile: Next called after the last of %d records", len(w.recs))
	}
	r := w.recs[w.next]
	w.next++
	w.write(AppendRecord(nil, r))
	w.want = r.DataOffset + r.Size
	return r, w.err
}

// Write writes payload bytes of the current record.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.written+int64(len(p)) > w.want {
		return 0, fmt.Errorf("blobfile: payload of record %d longer than its declared %d bytes", w.next-1, w.recs[max(w.next-1, 0)].Size)
	}
	before := w.written
	w.write(p)
	return int(w.written - before), w.err
}

func (w *Writer) finishPayload() error {
	if w.err != nil {
		return w.err
	}
	if w.written != w.want {
		return fmt.Errorf("blobfile: record %d payload is %d bytes short", w.next-1, w.want-w.written)
	}
	if pad := alignUp(w.written) - w.written; pad > 0 {
		w.write(zeros[:pad])
	}
	return w.err
}

// Close checks that every record was written and pads the last payload.
func (w *Writer) Close() error {
	if err := w.finishPayload(); err != nil {
		return err
	}
	if w.next != len(w.recs) {
		return fmt.Errorf("blobfile: %d of %d records written", w.next, len(w.recs))
	}
	return nil
}

// Size returns the total file size for entries.
func Size(entries []Entry) int64 {
	_, n := Layout(entries)
	return n
}
