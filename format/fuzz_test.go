package format

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the reader. It must never panic or allocate beyond the
// input's size, and every rejection must be a *FormatError naming an offset. Seeds:
// testdata/fuzz/FuzzOpen (small valid bundles), testdata/small.aneb, and edits of it that
// reach each check.
func FuzzOpen(f *testing.F) {
	small, err := os.ReadFile(filepath.Join("testdata", "small.aneb"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	f.Add(small[:HeaderSize])
	f.Add([]byte(Magic))
	edited := bytes.Clone(small)
	le.PutUint16(edited[offMinor:], 1) // a newer minor version: the lenient path
	reseal(edited)
	f.Add(edited)
	edited = bytes.Clone(small)
	le.PutUint64(entry(edited, 3)[entOffset:], 32768) // overlapping sections
	reseal(edited)
	f.Add(edited)

	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := openBytes(data)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("rejection is not a *FormatError: %v", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d outside the %d-byte input: %v", fe.Offset, len(data), err)
			}
		} else {
			exercise(t, b, len(data))
		}
		// Without the root digest check, mutated inputs reach the table and manifest checks
		// and the section accessors.
		if b, err := parse(bytes.NewReader(data), int64(len(data)), false); err == nil {
			exercise(t, b, len(data))
		}
	})
}

// exercise calls every accessor of an accepted bundle.
func exercise(t *testing.T, b *Bundle, size int) {
	var total int64
	for _, s := range b.Sections() {
		if s.Offset < Align || s.End() > b.Header().TableOffset {
			t.Fatalf("accepted section %q [%d, %d) outside the sections area", s.Name, s.Offset, s.End())
		}
		p, err := b.Bytes(s)
		if err != nil || int64(len(p)) != s.Length {
			t.Fatalf("Bytes(%q) = %d bytes, %v; want %d", s.Name, len(p), err, s.Length)
		}
		if n, err := io.Copy(io.Discard, b.SectionReader(s)); n != s.Length || err != nil {
			t.Fatalf("SectionReader(%q) read %d, %v", s.Name, n, err)
		}
		b.VerifySection(s)
		total += s.Length
	}
	if total > int64(size) {
		t.Fatalf("sections hold %d bytes of a %d-byte file", total, size)
	}
	b.Verify(nil)
	if _, err := b.FileDigest(nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
}
