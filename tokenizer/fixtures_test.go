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

var (
	qwenOnce sync.Once
	qwenJSON []byte
	qwenCfg  []byte
	qwenBlob []byte
	qwenErr  error
)

// qwenFiles returns the real Qwen2.5/Qwen3 tokenizer.json (decompressed), tokenizer_config.json
// and the tables compiled from them; the work is done once per test binary.
func qwenFiles(tb testing.TB) (tokJSON, cfgJSON, blob []byte) {
	tb.Helper()
	qwenOnce.Do(func() {
		z, err := os.ReadFile(filepath.Join(testdataDir, "qwen-tokenizer", "tokenizer.json.zst"))
		if err != nil {
			qwenErr = err
			return
		}
		dec, err := zstd.NewReader(nil)
		if err != nil {
			qwenErr = err
			return
		}
		defer dec.Close()
		if qwenJSON, err = dec.DecodeAll(z, nil); err != nil {
			qwenErr = err
			return
		}
		if qwenCfg, err = os.ReadFile(filepath.Join(testdataDir, "qwen-tokenizer", "tokenizer_config.json")); err != nil {
			qwenErr = err
			return
		}
		qwenBlob, _, qwenErr = Compile(qwenJSON, qwenCfg)
	})
	if qwenErr != nil {
		tb.Fatalf("loading the Qwen tokenizer fixture: %v", qwenErr)
	}
	return qwenJSON, qwenCfg, qwenBlob
}

func qwen(tb testing.TB) *Tokenizer {
	tb.Helper()
	_, _, blob := qwenFiles(tb)
	tk, err := Load(blob)
	if err != nil {
		tb.Fatal(err)
	}
	return tk
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
