package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Test fixtures live in the repository's testdata/ (shared with other packages).
var testdataDir = filepath.Join("..", "testdata")

// fixture is one real tokenizer of testdata/<name>-tokenizer: tokenizer.json (decompressed),
// tokenizer_config.json and the tables compiled from them.
type fixture struct {
	tokJSON, cfgJSON, blob []byte
	err                    error
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*fixture{}
)

// readZstd returns the decompressed content of a .zst file.
func readZstd(path string) ([]byte, error) {
	z, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return dec.DecodeAll(z, nil)
}

// familyFiles returns the files of testdata/<name>-tokenizer ("qwen", "llama3", "gpt2",
// "gemma3") and their compiled tables; the work is done once per test binary and family.
func familyFiles(tb testing.TB, name string) (tokJSON, cfgJSON, blob []byte) {
	tb.Helper()
	fixturesMu.Lock()
	f, ok := fixtures[name]
	if !ok {
		f = &fixture{}
		dir := filepath.Join(testdataDir, name+"-tokenizer")
		if f.tokJSON, f.err = readZstd(filepath.Join(dir, "tokenizer.json.zst")); f.err == nil {
			if f.cfgJSON, f.err = os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); f.err == nil {
				f.blob, _, f.err = Compile(f.tokJSON, f.cfgJSON)
			}
		}
		fixtures[name] = f
	}
	fixturesMu.Unlock()
	if f.err != nil {
		tb.Fatalf("loading the %s tokenizer fixture: %v", name, f.err)
	}
	return f.tokJSON, f.cfgJSON, f.blob
}

// family loads the compiled tables of testdata/<name>-tokenizer.
func family(tb testing.TB, name string) *Tokenizer {
	tb.Helper()
	_, _, blob := familyFiles(tb, name)
	tk, err := Load(blob)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

// qwenFiles returns the real Qwen2.5/Qwen3 tokenizer.json (decompressed), tokenizer_config.json
// and the tables compiled from them.
func qwenFiles(tb testing.TB) (tokJSON, cfgJSON, blob []byte) {
	tb.Helper()
	return familyFiles(tb, "qwen")
}

func qwen(tb testing.TB) *Tokenizer {
	tb.Helper()
	return family(tb, "qwen")
}

type tokRecord struct {
	Text    string `json:"text"`
	IDs     []int  `json:"ids"`
	Decoded string `json:"decoded"`
}

func readJSONL[T any](tb testing.TB, name string) []T {
	tb.Helper()
	f, err := os.Open(filepath.Join(testdataDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
