package blobfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// TestSingleTensorLayout checks the bytes of a one-tensor fp16 blob against the layout in
// docs/ane.md, "Weight blobs": header 1/2, DEADBEEF at 64, dtype 1 at 68, size at 72, offset
// 128 at 80, payload from 128.
func TestSingleTensorLayout(t *testing.T) {
	payload := []byte{1, 2, 3, 4, 5, 6} // three fp16 values
	var buf bytes.Buffer
	w, err := NewWriter(&buf, []Entry{{DType: FP16, Size: int64(len(payload))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	if r.Offset != 64 || r.DataOffset != 128 {
		t.Fatalf("record at %d data at %d; want 64 and 128", r.Offset, r.DataOffset)
	}
	if _, err := w.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) != 192 {
		t.Fatalf("file is %d bytes; want 192 (128 + 6 padded to 64)", len(b))
	}
	want := map[int]uint32{0: 1, 4: 2, 64: 0xDEADBEEF, 68: 1, 72: 6, 80: 128}
	for off, v := range want {
		if got := binary.LittleEndian.Uint32(b[off:]); got != v {
			t.Errorf("u32 at %d = %#x; want %#x", off, got, v)
		}
	}
	if !bytes.Equal(b[64:68], []byte{0xEF, 0xBE, 0xAD, 0xDE}) {
		t.Errorf("sentinel bytes % x", b[64:68])
	}
	if !bytes.Equal(b[128:134], payload) {
		t.Errorf("payload % x", b[128:134])
	}
	for i, c := range b[8:64] {
		if c != 0 {
			t.Fatalf("header reserved byte %d = %d", 8+i, c)
		}
	}
}

// TestPackedRecords checks the k-th record offset rule 64 + Σ(64 + padded payload) and that
// Parse finds every record.
func TestPackedRecords(t *testing.T) {
	entries := []Entry{{FP16, 896 * 2}, {FP16, 100}, {FP32, 8}}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, entries)
	for _, e := range entries {
		if _, err := w.Next(); err != nil {
			t.Fatal(err)
		}
		w.Write(make([]byte, e.Size))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, size := Layout(entries)
	wantOff := []int64{64, 64 + 64 + 1792, 64 + 64 + 1792 + 64 + 128}
	for i, r := range recs {
		if r.Offset != wantOff[i] {
			t.Errorf("record %d at %d; want %d", i, r.Offset, wantOff[i])
		}
	}
	if int64(buf.Len()) != size {
		t.Fatalf("wrote %d bytes; layout says %d", buf.Len(), size)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != 3 || f.Records[2].DType != FP32 || f.Records[1].Size != 100 {
		t.Fatalf("parsed %+v", f.Records)
	}
}

func TestRejectsBadBytes(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, []Entry{{FP16, 64}})
	w.Next()
	w.Write(make([]byte, 64))
	w.Close()
	good := buf.Bytes()
	cases := map[string]func([]byte) []byte{
		"short":       func(b []byte) []byte { return b[:10] },
		"version":     func(b []byte) []byte { b[4] = 3; return b },
		"sentinel":    func(b []byte) []byte { b[64] = 0; return b },
		"data offset": func(b []byte) []byte { b[80] = 200; return b },
		"size":        func(b []byte) []byte { b[72] = 255; b[73] = 255; return b },
		"huge count":  func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 1<<30); return b },
		"truncated":   func(b []byte) []byte { return b[:150] },
	}
	for name, mutate := range cases {
		b := mutate(append([]byte(nil), good...))
		if _, err := Parse(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v; want ErrFormat", name, err)
		}
	}
	f, _ := Parse(good)
	if _, err := f.RecordAt(0); err == nil {
		t.Error("RecordAt(0) accepted the file header as a record")
	}
	if _, err := f.RecordAt(128); err == nil {
		t.Error("RecordAt(128) accepted payload bytes as a record")
	}
}

func TestWriterChecksPayloadSize(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, []Entry{{FP16, 4}})
	w.Next()
	if _, err := w.Write(make([]byte, 5)); err == nil {
		t.Error("accepted a payload longer than declared")
	}
	w2, _ := NewWriter(&buf, []Entry{{FP16, 4}})
	w2.Next()
	w2.Write(make([]byte, 2))
	if err := w2.Close(); err == nil {
		t.Error("Close accepted a short payload")
	}
}
