package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSection is a section to write in a test bundle.
type testSection struct {
	kind SectionKind
	name string
	data []byte
}

// testManifest returns a small manifest that uses most of the manifest's fields.
func testManifest() *Manifest {
	eos := []int{151645, 151643}
	temp := 0.7
	return &Manifest{
		Producer: "anepack test",
		Model: Model{
			Name:         "tiny",
			Architecture: "Qwen2ForCausalLM",
			Config:       json.RawMessage(`{"hidden_size":64,"num_hidden_layers":2}`),
			DType:        "f16",
			Parameters:   12345,
		},
		Tensors: []Tensor{{
			Name:  "model.norm.weight",
			DType: "f32",
			Shape: []int{64},
			Parts: []TensorPart{{Section: "tensors/norms", Offset: 0, Rows: 64, Size: 256}},
		}},
		Generation: Generation{EOSTokenIDs: eos, Temperature: &temp},
		Provenance: Provenance{Source: "local", Files: []SourceFile{{Name: "config.json", Size: 10, SHA256: strings.Repeat("ab", 32)}}},
	}
}

// smallSections are the sections of testdata/small.aneb: a page-crossing section, an empty one
// and two tiny ones.
func smallSections() []testSection {
	blob := make([]byte, 20000) // crosses a page boundary
	for i := range blob {
		blob[i] = byte(i*7 + i>>8)
	}
	return []testSection{
		{KindTensors, "tensors/norms", bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, 64)}, // 64 f32 ones
		{KindMIL, "mil/empty", nil},
		{KindBlob, "blob/layers.0.mlp", blob},
		{KindTokenizer, "tokenizer", []byte("compiled tables")},
	}
}

// writeBundle writes secs and m to path and returns the header.
func writeBundle(t testing.TB, path string, secs []testSection, m *Manifest) Header {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, s := range secs {
		if _, err := w.Add(s.kind, s.name, s.data); err != nil {
			t.Fatal(err)
		}
	}
	h, err := w.Commit(m)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// smallBundle returns the bytes of a freshly written small bundle.
func smallBundle(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.aneb")
	writeBundle(t, path, smallSections(), testManifest())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var le = binary.LittleEndian

// entry returns the i-th section table entry of the bundle bytes b.
func entry(b []byte, i int) []byte {
	off := int(le.Uint64(b[offTableOff:])) + i*EntrySize
	return b[off : off+EntrySize]
}

// reseal recomputes the root digest of b after a test has edited the header, the table or
// the manifest, so that the check under test, not the root digest, is what fails.
func reseal(b []byte) {
	tableOff, tableLen := le.Uint64(b[offTableOff:]), le.Uint64(b[offTableLen:])
	manOff, manLen := le.Uint64(b[offManifestOff:]), le.Uint64(b[offManifestLen:])
	clear(b[offRootDigest : offRootDigest+32])
	h := sha256.New()
	h.Write(b[:HeaderSize])
	h.Write(b[tableOff : tableOff+tableLen])
	h.Write(b[manOff : manOff+manLen])
	h.Sum(b[offRootDigest:offRootDigest])
}

// openBytes opens b through NewReader.
func openBytes(b []byte) (*Bundle, error) {
	return NewReader(bytes.NewReader(b), int64(len(b)))
}

// wantFormatError checks that err wraps sentinel (if not nil), is a *FormatError at offset
// (if offset >= 0), and mentions every one of words.
func wantFormatError(t *testing.T, err error, sentinel error, offset int64, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", words)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %v", err, sentinel)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("error %q is not a *FormatError", err)
	} else if offset >= 0 && fe.Offset != offset {
		t.Errorf("error %q at offset %d; want %d", err, fe.Offset, offset)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// dirNames lists the names in dir.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
