package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestHFExtraCases checks edge cases that HF tokenizers 0.23.2 encoded on a 16-core Xeon
// (bench/tokenizer_vs_hf.py wrote hf-extra.jsonl, stored zstd-compressed): combining marks next
// to added tokens, exotic whitespace, long runs, contractions in upper case, and 1500 seeded random
// mixes of every character class the pre-tokenizer distinguishes.
func TestHFExtraCases(t *testing.T) {
	tk := qwen(t)
	f, err := os.Open(filepath.Join("testdata", "hf-extra.jsonl.zst"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	n, bad := 0, 0
	for sc.Scan() {
		var r tokRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		if got := tk.Encode(r.Text); !slices.Equal(got, r.IDs) {
			bad++
			if bad <= 10 {
				t.Errorf("%q:\n got  %v\n want %v", r.Text, got, r.IDs)
			}
		}
		if d := tk.Decode(r.IDs); d != r.Decoded {
			bad++
			if bad <= 10 {
				t.Errorf("Decode for %q = %q, want %q", r.Text, d, r.Decoded)
			}
		}
	}
	if n < 1500 {
		t.Fatalf("only %d cases", n)
	}
	if bad > 0 {
		t.Fatalf("%d of %d cases differ from HF", bad, n)
	}
}
