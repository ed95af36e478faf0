package gpt2tok

import (
	"bytes"
	"strings"
	"testing"
)

// TestSlowFiles: the files have GPT2Tokenizer's shapes and sizes (50257 entries, 50000 merges).
func TestSlowFiles(t *testing.T) {
	f, err := SlowFiles()
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
