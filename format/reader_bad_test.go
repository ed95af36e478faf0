package format

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The small bundle's layout, from smallSections: sections at 16384 (256 bytes), 32768 (empty),
// 32768 (20000 bytes), 65536 (15 bytes); table at 81920, four entries; manifest after it.
const (
	smallTable = 81920
	smallMan   = smallTable + 4*EntrySize
)

func TestSmallLayout(t *testing.T) {
	b, err := openBytes(smallBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		off, len int64
	}{{"tensors/norms", 16384, 256}, {"mil/empty", 32768, 0}, {"blob/layers.0.mlp", 32768, 20000}, {"tokenizer", 65536, 15}}
	secs := b.Sections()
	for i, w := range want {
		if s := secs[i]; s.Name != w.name || s.Offset != w.off || s.Length != w.len {
			t.Errorf("section %d = %q [%d,+%d); want %q [%d,+%d)", i, s.Name, s.Offset, s.Length, w.name, w.off, w.len)
		}
	}
	if h := b.Header(); h.TableOffset != smallTable || h.ManifestOffset != smallMan {
		t.Errorf("table at %d, manifest at %d; want %d, %d", h.TableOffset, h.ManifestOffset, smallTable, smallMan)
	}
}

func TestWrongMagic(t *testing.T) {
	b := smallBundle(t)
	copy(b, "PK\x03\x04")
	_, err := openBytes(b)
	wantFormatError(t, err, ErrNotBundle, 0, `"PK\x03\x04"`, `"ANEB"`)

	_, err = openBytes([]byte("hi"))
	wantFormatError(t, err, ErrNotBundle, 0, `"hi"`)

	// Through Open, the error names the file.
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a bundle\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	wantFormatError(t, err, ErrNotBundle, 0, path)
}

func TestNewerMajorVersion(t *testing.T) {
	b := smallBundle(t)
	le.PutUint16(b[offMajor:], 2)
	le.PutUint16(b[offMinor:], 3)
	_, err := openBytes(b)
	wantFormatError(t, err, ErrVersion, offMajor, "2.3", VersionString(), "upgrade")

	le.PutUint16(b[offMajor:], 0)
	_, err = openBytes(b)
	wantFormatError(t, err, ErrVersion, offMajor, "0.3")
}

// TestNewerMinorVersion checks that a bundle of the next minor version with a new section kind,
// entry flags and header flags is read, and the same bundle labelled with this version is refused.
func TestNewerMinorVersion(t *testing.T) {
	b := smallBundle(t)
	le.PutUint16(b[offMinor:], MinorVersion+1)
	le.PutUint32(b[offFlags:], 1)
	e := entry(b, 3) // "tokenizer"
	le.PutUint32(e[entKind:], 9)
	le.PutUint32(e[entFlags:], 4)
	man := b[smallMan:]
	i := bytes.Index(man, []byte(`"format_version": "`+VersionString()+`"`))
	copy(man[i:], fmt.Sprintf(`"format_version": "1.%d"`, MinorVersion+1))
	reseal(b)
	bun, err := openBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := bun.Section("tokenizer")
	if !ok || s.Kind != 9 || s.Kind.String() != "kind(9)" || s.Flags != 4 || s.Kind.Known() {
		t.Errorf("unknown section = %+v, %v", s, ok)
	}
	if len(bun.Sections()) != 4 {
		t.Errorf("%d sections; want all 4", len(bun.Sections()))
	}
	if err := bun.Verify(nil); err != nil {
		t.Errorf("Verify: %v", err)
	}

	le.PutUint16(b[offMinor:], MinorVersion)
	copy(man[i:], `"format_version": "`+VersionString()+`"`)
	reseal(b)
	_, err = openBytes(b)
	wantFormatError(t, err, nil, offFlags, "flags")
	le.PutUint32(b[offFlags:], 0)
	reseal(b)
	_, err = openBytes(b)
	wantFormatError(t, err, nil, smallTable+3*EntrySize+entKind, "unknown kind 9", "tokenizer")
}

func TestTruncated(t *testing.T) {
	full := smallBundle(t)
	for _, n := range []int{len(full) - 1, smallMan + 10, smallTable, 40000, 16384, 200, 128} {
		_, err := openBytes(full[:n])
		wantFormatError(t, err, ErrTruncated, offFileSize, "header says the file is")
	}
	for _, n := range []int{127, 4, 2, 0} {
		_, err := openBytes(full[:n])
		wantFormatError(t, err, ErrTruncated, int64(n))
	}
	// Through Open (the mmap path) too.
	path := filepath.Join(t.TempDir(), "cut.aneb")
	for _, n := range []int{len(full) / 2, 100} {
		if err := os.WriteFile(path, full[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path)
		wantFormatError(t, err, ErrTruncated, -1, path)
	}
}

func TestTrailingBytes(t *testing.T) {
	b := append(smallBundle(t), 0)
	_, err := openBytes(b)
	wantFormatError(t, err, nil, offFileSize, "trailing")
	if errors.Is(err, ErrTruncated) {
		t.Error("trailing bytes reported as truncation")
	}
}

// TestBadHeaderFields checks every header field's bounds, with the root digest resealed so that
// the field check is what fails.
func TestBadHeaderFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(b []byte)
		at    int64
		words []string
	}{
		{"header size", func(b []byte) { le.PutUint32(b[offHeaderSize:], 64) }, offHeaderSize, []string{"header size is 64"}},
		{"reserved", func(b []byte) { le.PutUint32(b[offReserved:], 1) }, offReserved, []string{"reserved"}},
		{"reserved tail", func(b []byte) { b[120] = 1 }, 120, []string{"reserved header bytes"}},
		{"table unaligned", func(b []byte) { le.PutUint64(b[offTableOff:], smallTable+8) }, offTableOff, []string{"not a multiple"}},
		{"table in header page", func(b []byte) { le.PutUint64(b[offTableOff:], 0) }, offTableOff, []string{"not a multiple"}},
		{"table past end", func(b []byte) { le.PutUint64(b[offTableOff:], 1<<62) }, offTableOff, []string{"past the end"}},
		{"table length", func(b []byte) { le.PutUint64(b[offTableLen:], 3*EntrySize) }, offTableLen, []string{"not 4 sections"}},
		{"huge count", func(b []byte) {
			le.PutUint32(b[offCount:], 0xffffffff)
			le.PutUint64(b[offTableLen:], 0xffffffff*EntrySize)
		}, offCount, []string{"exceeds the limit"}},
		{"count beyond file", func(b []byte) {
			le.PutUint32(b[offCount:], 1000)
			le.PutUint64(b[offTableLen:], 1000*EntrySize)
		}, offTableLen, []string{"runs past the end"}},
		{"manifest offset", func(b []byte) { le.PutUint64(b[offManifestOff:], smallMan+1) }, offManifestOff, []string{"not right after"}},
		{"manifest length", func(b []byte) { le.PutUint64(b[offManifestLen:], 1<<40) }, offManifestLen, []string{"does not reach the end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := smallBundle(t)
			tc.edit(b)
			resealSafe(b)
			_, err := openBytes(b)
			wantFormatError(t, err, nil, tc.at, tc.words...)
		})
	}
}

// resealSafe reseals b if the edited header still describes ranges inside b.
func resealSafe(b []byte) {
	n := uint64(len(b))
	to, tl := le.Uint64(b[offTableOff:]), le.Uint64(b[offTableLen:])
	mo, ml := le.Uint64(b[offManifestOff:]), le.Uint64(b[offManifestLen:])
	if to <= n && tl <= n-to && mo <= n && ml <= n-mo {
		reseal(b)
	}
}

// TestSectionOutOfBounds edits one section's table entry (resealed) in ways that put it
// outside the sections area.
func TestSectionOutOfBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry int
		field int
		value uint64
		words []string
	}{
		{"past the table", 3, entOffset, smallTable, []string{`"tokenizer"`, "out of bounds"}},
		{"far past the end", 3, entOffset, 1 << 40, []string{"out of bounds"}},
		{"length into the table", 2, entLength, smallTable, []string{`"blob/layers.0.mlp"`, "out of bounds"}},
		{"length overflows", 2, entLength, 1<<64 - 1, []string{"out of bounds"}},
		{"in the header page", 0, entOffset, 0, []string{`"tensors/norms"`, "header page"}},
		{"unaligned", 0, entOffset, 16384 + 64, []string{"not a multiple of 16384"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := smallBundle(t)
			le.PutUint64(entry(b, tc.entry)[tc.field:], tc.value)
			reseal(b)
			_, err := openBytes(b)
			wantFormatError(t, err, nil, smallTable+int64(tc.entry)*EntrySize+entOffset, tc.words...)
		})
	}
}

func TestOverlappingSections(t *testing.T) {
	b := smallBundle(t)
	le.PutUint64(entry(b, 3)[entOffset:], 32768) // "tokenizer" onto "blob/layers.0.mlp"
	reseal(b)
	_, err := openBytes(b)
	wantFormatError(t, err, nil, -1, "overlaps", `"tokenizer"`, `"blob/layers.0.mlp"`)

	// An empty section inside another one's bytes is an overlap too; at its start it is not.
	b = smallBundle(t)
	le.PutUint64(entry(b, 1)[entOffset:], 49152) // "mil/empty" into the blob's second page
	reseal(b)
	_, err = openBytes(b)
	wantFormatError(t, err, nil, smallTable+1*EntrySize+entOffset, "overlaps", `"mil/empty"`)

	// Two sections sharing an offset, listed out of order, neither empty.
	b = smallBundle(t)
	le.PutUint64(entry(b, 0)[entOffset:], 65536) // "tensors/norms" onto "tokenizer"
	reseal(b)
	_, err = openBytes(b)
	wantFormatError(t, err, nil, -1, "overlaps", `"tensors/norms"`, `"tokenizer"`)
}

func TestBadSectionNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(e []byte)
		words []string
	}{
		{"empty", func(e []byte) { le.PutUint16(e[entNameLen:], 0) }, []string{"name length 0"}},
		{"too long", func(e []byte) { le.PutUint16(e[entNameLen:], 71) }, []string{"name length 71"}},
		{"NUL", func(e []byte) { e[entName+1] = 0 }, []string{"NUL"}},
		{"bad UTF-8", func(e []byte) { e[entName] = 0xff }, []string{"UTF-8"}},
		{"junk after name", func(e []byte) { e[EntrySize-1] = 'x' }, []string{"after the name"}},
		{"duplicate", func(e []byte) {
			clear(e[entName:])
			copy(e[entName:], "tensors/norms")
			le.PutUint16(e[entNameLen:], uint16(len("tensors/norms")))
		}, []string{"duplicate", `"tensors/norms"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := smallBundle(t)
			tc.edit(entry(b, 3))
			reseal(b)
			_, err := openBytes(b)
			wantFormatError(t, err, nil, -1, append(tc.words, "entry 3")...)
		})
	}
}

func TestBadManifest(t *testing.T) {
	b := smallBundle(t)
	b[len(b)-2] = ']' // the closing brace of the top-level object
	reseal(b)
	_, err := openBytes(b)
	wantFormatError(t, err, nil, -1, "manifest is not valid JSON")

	b = smallBundle(t)
	man := b[smallMan:]
	i := bytes.Index(man, []byte(`"`+VersionString()+`"`))
	copy(man[i:], `"1.7"`)
	reseal(b)
	_, err = openBytes(b)
	wantFormatError(t, err, nil, smallMan, `"1.7"`, VersionString())
}

// TestRootDigest checks that any change to the header, the table or the manifest is caught at
// open, while a change to a section's bytes is caught by Verify and names the section.
func TestRootDigest(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   int
		bit  byte
	}{
		{"header minor version", offMinor, 1}, // 1.0 -> 1.1 passes every field check
		{"root digest", offRootDigest + 31, 0x20},
		{"table digest", smallTable + 2*EntrySize + entSHA256 + 5, 0x20},
		{"table name", smallTable + entName + 2, 0x20}, // "tensors/norms" -> "teNsors/norms"
		{"manifest", smallMan + 20, 0x20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := smallBundle(t)
			b[tc.at] ^= tc.bit
			_, err := openBytes(b)
			wantFormatError(t, err, ErrDigest, offRootDigest, "root digest")
		})
	}
}

func TestSectionDigestMismatch(t *testing.T) {
	b := smallBundle(t)
	b[32768+12345] ^= 1 // inside "blob/layers.0.mlp"
	bun, err := openBytes(b)
	if err != nil {
		t.Fatalf("Open checks only the root digest, yet: %v", err)
	}
	err = bun.Verify(nil)
	wantFormatError(t, err, ErrDigest, 32768, `"blob/layers.0.mlp"`, "hashes to")
	if strings.Contains(err.Error(), "tensors/norms") {
		t.Errorf("Verify blames an intact section: %v", err)
	}
	for _, s := range bun.Sections() {
		err := bun.VerifySection(s)
		if bad := s.Name == "blob/layers.0.mlp"; bad != (err != nil) || (bad && !errors.Is(err, ErrDigest)) {
			t.Errorf("VerifySection(%q) = %v", s.Name, err)
		}
	}

	// Two damaged sections: both are named.
	b[16384] ^= 1
	bun, _ = openBytes(b)
	err = bun.Verify(nil)
	wantFormatError(t, err, ErrDigest, -1, `"blob/layers.0.mlp"`, `"tensors/norms"`)
}

func TestNonZeroPadding(t *testing.T) {
	for _, tc := range []struct {
		at    int
		after string
	}{
		{200, "the header"},
		{16384 + 256, `section "tensors/norms"`},
		{32768 + 20000 + 7, `section "blob/layers.0.mlp"`},
		{smallTable - 1, `section "tokenizer"`},
	} {
		b := smallBundle(t)
		b[tc.at] = 0xAA
		bun, err := openBytes(b)
		if err != nil {
			t.Fatalf("padding byte at %d: Open: %v", tc.at, err)
		}
		err = bun.Verify(nil)
		wantFormatError(t, err, ErrDigest, int64(tc.at), "padding", tc.after)
	}
}
