package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
)

// TestSynthPackVocabMerges: `anepack synth --tokenizer-dir` takes a GPT-2-style tokenizer
// (vocab.json + merges.txt, no tokenizer.json) and `anepack` packs the checkpoint with it.
func TestSynthPackVocabMerges(t *testing.T) {
	dir := t.TempDir()
	tokDir := filepath.Join(dir, "gpt2-tokenizer")
	os.MkdirAll(tokDir, 0o755)
	files, err := testtok.GPT2SlowFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		os.WriteFile(filepath.Join(tokDir, name), data, 0o644)
	}
	var cfg map[string]any
	b, _ := os.ReadFile("../../configs/qwen2-tiny.json")
	json.Unmarshal(b, &cfg)
	cfg["vocab_size"], cfg["bos_token_id"], cfg["eos_token_id"] = 50257, 50256, 50256
	b, _ = json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	os.WriteFile(cfgPath, b, 0o644)

	ckpt := filepath.Join(dir, "ckpt")
	mustRun(t, "synth", "--config", cfgPath, "--seed", "2", "-o", ckpt, "--tokenizer-dir", tokDir, "-q")
	if _, err := os.Stat(filepath.Join(ckpt, "tokenizer.json")); err == nil {
		t.Fatal("synth wrote a tokenizer.json")
	}
	bundle := filepath.Join(dir, "gpt2.aneb")
	mustRun(t, ckpt, "-o", bundle)
	if table := mustRun(t, "inspect", bundle); !strings.Contains(table, "pre-tokenizer gpt2") || !strings.Contains(table, "file/merges.txt") {
		t.Errorf("inspect:\n%s", table)
	}

	os.Remove(filepath.Join(tokDir, "merges.txt"))
	if _, errOut, code := run(t, "synth", "--config", cfgPath, "-o", filepath.Join(dir, "x"), "--tokenizer-dir", tokDir); code == 0 ||
		!strings.Contains(errOut, "missing tokenizer.json (or vocab.json and merges.txt)") {
		t.Errorf("synth without merges.txt: exit %d, %s", code, errOut)
	}
}
