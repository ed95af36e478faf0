package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/small.aneb and the FuzzOpen seed corpus")

// TestHeaderBytes checks a one-section bundle byte by byte against the layout in doc.go.
func TestHeaderBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.aneb")
	m := &Manifest{Producer: "p"}
	h := writeBundle(t, path, []testSection{{KindBlob, "a", []byte("hello")}}, m)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{
  "format_version": "1.3",
  "producer": "p",
  "model": {
    "name": "",
    "architecture": "",
    "config": null,
    "dtype": "",
    "parameters": 0
  },
  "tensors": null,
  "generation": {},
  "provenance": {
    "source": "",
    "files": null
  }
}
`)
	// The section "hello" is at 16384, the table at 32768 (one entry), the manifest right after.
	wantLen := 32768 + 128 + len(manifest)
	if len(b) != wantLen {
		t.Fatalf("file is %d bytes; want %d", len(b), wantLen)
	}
	// Header bytes 0..63, spelled out field by field (little-endian).
	wantHead := make([]byte, 0, 64)
	wantHead = append(wantHead, "ANEB"...)
	wantHead = append(wantHead, 1, 0, 3, 0, 0, 0, 0, 0, 128, 0, 0, 0) // version 1.3, flags 0, header size
	wantHead = append(wantHead, 0x00, 0x80, 0, 0, 0, 0, 0, 0)         // 32768
	wantHead = append(wantHead, 0x80, 0, 0, 0, 0, 0, 0, 0)            // 128
	wantHead = append(wantHead, 1, 0, 0, 0, 0, 0, 0, 0)               // count 1, reserved 0
	wantHead = append(wantHead, 0x80, 0x80, 0, 0, 0, 0, 0, 0)         // 32896
	wantHead = le.AppendUint64(wantHead, uint64(len(manifest)))
	wantHead = le.AppendUint64(wantHead, uint64(wantLen))
	if !bytes.Equal(b[:64], wantHead) {
		t.Errorf("header bytes 0..63\n% x\nwant\n% x", b[:64], wantHead)
	}
	if !bytes.Equal(b[96:Align], make([]byte, Align-96)) {
		t.Error("header bytes 96..16383 are not zero")
	}
	if string(b[16384:16389]) != "hello" || !bytes.Equal(b[16389:32768], make([]byte, 32768-16389)) {
		t.Error("section bytes or the padding after them are wrong")
	}
	sum := sha256.Sum256([]byte("hello"))
	wantEntry := []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}
	wantEntry = append(wantEntry, sum[:]...)
	wantEntry = append(wantEntry, 1, 0, 'a')
	wantEntry = append(wantEntry, make([]byte, 69)...)
	if !bytes.Equal(b[32768:32896], wantEntry) {
		t.Errorf("table entry\n% x\nwant\n% x", b[32768:32896], wantEntry)
	}
	if !bytes.Equal(b[32896:], manifest) {
		t.Errorf("manifest\n%s\nwant\n%s", b[32896:], manifest)
	}

	// Root digest: header with the digest zeroed, then the table, then the manifest.
	zeroed := bytes.Clone(b[:HeaderSize])
	clear(zeroed[64:96])
	root := sha256.Sum256(append(append(zeroed, wantEntry...), manifest...))
	if !bytes.Equal(b[64:96], root[:]) || h.RootDigest != root {
		t.Errorf("root digest %x (returned %x); want %x", b[64:96], h.RootDigest, root)
	}
	if h.RootDigestString() != "sha256:"+hex.EncodeToString(root[:]) {
		t.Errorf("RootDigestString = %s", h.RootDigestString())
	}
}

func TestSectionKindNames(t *testing.T) {
	for k, want := range map[SectionKind]string{
		KindTensors: "tensors", KindBlob: "blob", KindMIL: "mil", KindTokenizer: "tokenizer", KindFile: "file",
		0: "kind(0)", 6: "kind(6)", 1 << 31: "kind(2147483648)",
	} {
		if got := k.String(); got != want {
			t.Errorf("SectionKind(%d).String() = %q; want %q", uint32(k), got, want)
		}
		back, err := ParseSectionKind(want)
		if err != nil || back != k {
			t.Errorf("ParseSectionKind(%q) = %v, %v; want %d", want, back, err, uint32(k))
		}
	}
	for _, bad := range []string{"", "Tensors", "kind(x)", "kind(1)x", "kind(-1)"} {
		if k, err := ParseSectionKind(bad); err == nil {
			t.Errorf("ParseSectionKind(%q) = %d; want an error", bad, k)
		}
	}
}

// TestGoldenBundle checks that the writer's output is byte for byte testdata/small.aneb, the
// bundle that also seeds FuzzOpen. A change to the layout must be deliberate: regenerate with
// go test ./format -run TestGoldenBundle -update.
func TestGoldenBundle(t *testing.T) {
	got := smallBundle(t)
	golden := filepath.Join("testdata", "small.aneb")
	if *update {
		writeGolden(t, golden, got)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("writer output (%d bytes) differs from %s (%d bytes)", len(got), golden, len(want))
	}
	b, err := Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Verify(nil); err != nil {
		t.Fatal(err)
	}
}

// TestReadsVersion10 opens a bundle written by the 1.0 writer (the golden bundle before the
// minor version moved on): every 1.x file stays readable.
func TestReadsVersion10(t *testing.T) {
	b, err := Open(filepath.Join("testdata", "small-1.0.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if h := b.Header(); h.Version() != "1.0" || b.Manifest().FormatVersion != "1.0" {
		t.Errorf("version %s, manifest %q", h.Version(), b.Manifest().FormatVersion)
	}
	if err := b.Verify(nil); err != nil {
		t.Fatal(err)
	}
}

// writeGolden writes testdata/small.aneb and the FuzzOpen seed corpus (in the go test fuzz v1
// encoding): a bundle with no sections and one with a single tiny section. (FuzzOpen adds
// small.aneb itself; the seeds stay small because every zero byte takes four in the encoding.)
func writeGolden(t *testing.T, golden string, small []byte) {
	if err := os.WriteFile(golden, small, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, secs := range map[string][]testSection{
		"no-sections": nil,
		"one-section": {{KindMIL, "mil/p", []byte("program(1.0)")}},
	} {
		path := filepath.Join(t.TempDir(), name+".aneb")
		writeBundle(t, path, secs, &Manifest{Producer: "seed"})
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		seed := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), seed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
