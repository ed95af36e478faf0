package testtok

import (
	"bytes"
	"strings"
	"testing"
)

// TestGPT2SlowFiles: the files have GPT2Tokenizer's shapes and sizes (50257 entries, 50000 merges).
func TestGPT2SlowFiles(t *testing.T) {
	f, err := GPT2SlowFiles()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(f["merges.txt"]), "\n"), "\n")
	if lines[0] != "#version: 0.2" || len(lines) != 50001 || lines[1] != "Ġ t" {
		t.Errorf("merges.txt: %d lines, starting %q", len(lines), lines[:2])
	}
	if n := bytes.Count(f["vocab.json"], []byte("\n  \"")); n != 50257 {
		t.Errorf("vocab.json has %d entries, want 50257", n)
	}
	if !bytes.Contains(f["vocab.json"], []byte(`"<|endoftext|>": 50256`)) {
		t.Error("vocab.json lacks <|endoftext|> (unescaped)")
	}
	if _, _, err := Split([]byte(`{"model": {}}`)); err == nil {
		t.Error("empty vocab accepted")
	}
}

// TestFiles: every family of testdata/ reads, and an unknown one is an error.
func TestFiles(t *testing.T) {
	for _, f := range []string{"qwen", "llama3", "gpt2", "gemma3"} {
		tj, cfg, err := Files(f)
		if err != nil || !bytes.HasPrefix(bytes.TrimSpace(tj), []byte("{")) || len(cfg) == 0 {
			t.Errorf("%s: %d+%d bytes, %v", f, len(tj), len(cfg), err)
		}
	}
	if _, _, err := Files("nosuch"); err == nil {
		t.Error("unknown family accepted")
	}
}
