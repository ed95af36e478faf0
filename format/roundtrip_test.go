package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// roundTripSections writes a bundle with several kinds of sections, empty ones included, one
// streamed with io.Copy from a real 1.6 MB file (through sectionWriter.ReadFrom) and one
// written in small pieces.
func writeRoundTrip(t *testing.T, path string) (map[string][]byte, *Manifest) {
	t.Helper()
	src := filepath.Join("..", "testdata", "qwen-tokenizer", "tokenizer.json.zst")
	want := map[string][]byte{}
	m := testManifest()

	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, s := range smallSections() {
		if _, err := w.Add(s.kind, s.name, s.data); err != nil {
			t.Fatal(err)
		}
		want[s.name] = s.data
	}

	sw, err := w.Begin(KindFile, "file/tokenizer.json.zst")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(sw, f); err != nil {
		t.Fatal(err)
	}
	sec, err := w.End()
	if err != nil {
		t.Fatal(err)
	}
	want[sec.Name], err = os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}

	sw, err = w.Begin(KindBlob, "blob/pieces")
	if err != nil {
		t.Fatal(err)
	}
	var pieces []byte
	for i := range 5000 { // 5000 writes of 1..13 bytes
		p := bytes.Repeat([]byte{byte(i)}, 1+i%13)
		pieces = append(pieces, p...)
		if _, err := sw.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.End(); err != nil {
		t.Fatal(err)
	}
	want["blob/pieces"] = pieces

	if _, err := w.Add(KindFile, "file/empty-at-end", []byte{}); err != nil {
		t.Fatal(err)
	}
	want["file/empty-at-end"] = nil
	if _, err := w.Commit(m); err != nil {
		t.Fatal(err)
	}
	return want, m
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.aneb")
	want, m := writeRoundTrip(t, path)
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "model.aneb" {
		t.Fatalf("directory holds %q; want only model.aneb", names)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o644 {
		t.Errorf("bundle mode %v; want 0644", perm)
	}

	mapped, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	if mapped.data == nil {
		t.Error("Open did not memory-map the file")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	viaReader, err := NewReader(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer viaReader.Close()

	for name, b := range map[string]*Bundle{"mmap": mapped, "ReaderAt": viaReader} {
		t.Run(name, func(t *testing.T) {
			checkRoundTrip(t, b, raw, want, m)
		})
	}
}

func checkRoundTrip(t *testing.T, b *Bundle, raw []byte, want map[string][]byte, m *Manifest) {
	h := b.Header()
	if h.Version() != VersionString() || h.FileSize != int64(len(raw)) || int(h.SectionCount) != len(want) {
		t.Errorf("header %+v; want version 1.1, %d bytes, %d sections", h, len(raw), len(want))
	}
	secs := b.Sections()
	if len(secs) != len(want) {
		t.Fatalf("%d sections; want %d", len(secs), len(want))
	}
	prevEnd := int64(Align)
	for i, s := range secs {
		if s.Offset%Align != 0 || s.Offset < prevEnd {
			t.Errorf("section %d %q at %d: not aligned or not after the previous end %d", i, s.Name, s.Offset, prevEnd)
		}
		prevEnd = s.End()
		data, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected section %q", s.Name)
			continue
		}
		if got, ok := b.Section(s.Name); !ok || got != s {
			t.Errorf("Section(%q) = %+v, %v; want %+v", s.Name, got, ok, s)
		}
		got, err := b.Bytes(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("section %q: %d bytes differ from the %d written", s.Name, len(got), len(data))
		}
		all, err := io.ReadAll(b.SectionReader(s))
		if err != nil || !bytes.Equal(all, data) {
			t.Errorf("SectionReader(%q): %d bytes, %v", s.Name, len(all), err)
		}
		if s.SHA256 != sha256.Sum256(data) {
			t.Errorf("section %q digest %s; want sha256 of its data", s.Name, s.DigestString())
		}
		if err := b.VerifySection(s); err != nil {
			t.Error(err)
		}
	}
	var calls int
	var last int64
	if err := b.Verify(func(done, total int64) {
		calls++
		if done < last || done > total || total != int64(len(raw)) {
			t.Errorf("progress %d/%d after %d; file is %d bytes", done, total, last, len(raw))
		}
		last = done
	}); err != nil {
		t.Fatal(err)
	}
	if calls < 2 || last != int64(len(raw)) {
		t.Errorf("Verify reported progress %d times, last %d; want several, ending at %d", calls, last, len(raw))
	}
	sum := sha256.Sum256(raw)
	d, err := b.FileDigest(nil)
	if err != nil || d != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("FileDigest = %s, %v; want sha256 of the file", d, err)
	}

	// The manifest comes back as written, with the version filled in.
	wantM := *m
	wantM.FormatVersion = VersionString()
	if g, w := compactJSON(t, b.Manifest()), compactJSON(t, &wantM); g != w {
		t.Errorf("manifest\n%s\nwant\n%s", g, w)
	}
	if b.Manifest().FindTensor("model.norm.weight") == nil {
		t.Error("manifest lost its tensor")
	}
}

func compactJSON(t *testing.T, v any) string {
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, js); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestNoSections checks the smallest bundle: header page, empty table, manifest.
func TestNoSections(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.aneb")
	h := writeBundle(t, path, nil, &Manifest{})
	if h.TableOffset != Align || h.TableLength != 0 || h.ManifestOffset != Align {
		t.Errorf("header %+v; want table and manifest at %d", h, Align)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(b.Sections()) != 0 {
		t.Errorf("sections %v", b.Sections())
	}
	if err := b.Verify(nil); err != nil {
		t.Error(err)
	}
}

// TestClosed checks that a closed bundle refuses to touch its unmapped memory.
func TestClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.aneb")
	writeBundle(t, path, smallSections(), testManifest())
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := b.Sections()[0]
	r := b.SectionReader(s)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.Bytes(s); err != ErrClosed {
		t.Errorf("Bytes after Close: %v; want ErrClosed", err)
	}
	if _, err := r.Read(make([]byte, 4)); err != ErrClosed {
		t.Errorf("SectionReader after Close: %v; want ErrClosed", err)
	}
	if err := b.Verify(nil); err != ErrClosed {
		t.Errorf("Verify after Close: %v; want ErrClosed", err)
	}
}

// TestForeignSection checks that a Section not from the bundle is refused.
func TestForeignSection(t *testing.T) {
	b, err := openBytes(smallBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	s := b.Sections()[0]
	s.Length += Align
	if _, err := b.Bytes(s); err == nil {
		t.Error("Bytes accepted a section with a changed length")
	}
	if err := b.VerifySection(Section{Name: "nope"}); err == nil {
		t.Error("VerifySection accepted an unknown section")
	}
	if n, _ := io.Copy(io.Discard, b.SectionReader(s)); n != 0 {
		t.Errorf("SectionReader of a foreign section read %d bytes", n)
	}
}
