package testmodel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/synth"
)

var gpt2Tok build

// GPT2TokenizerBundle returns the path of a bundle (f16) whose tokenizer is GPT-2's, packed from
// vocab.json + merges.txt as a GPT-2 fine-tune without tokenizer.json ships it (so it has no chat
// template), with the qwen2-tiny SYNTH-1 model resized to GPT-2's 50257-id vocabulary. It is for
// tests of what happens around the tokenizer (no chat template, BOS handling), not of GPT-2 the
// architecture. Built once per process; the file must not be modified.
func GPT2TokenizerBundle(tb testing.TB) string {
	tb.Helper()
	gpt2Tok.once.Do(func() { gpt2Tok.path, gpt2Tok.err = buildGPT2Tokenizer() })
	if gpt2Tok.err != nil {
		tb.Fatalf("building the GPT-2-tokenizer bundle: %v", gpt2Tok.err)
	}
	return gpt2Tok.path
}

func buildGPT2Tokenizer() (string, error) {
	g, err := loadGolden("qwen2-tiny")
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := json.Unmarshal(g.Config, &cfg); err != nil {
		return "", err
	}
	cfg["vocab_size"], cfg["bos_token_id"], cfg["eos_token_id"] = 50257, 50256, 50256
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	files, err := testtok.GPT2SlowFiles()
	if err != nil {
		return "", err
	}
	root, err := buildDir()
	if err != nil {
		return "", err
	}
	ckpt := filepath.Join(root, "gpt2-tokenizer-checkpoint")
	defer os.RemoveAll(ckpt)
	ctx := context.Background()
	if err := synth.WriteCheckpoint(ctx, ckpt, cfgJSON, files, synth.Options{Seed: g.Seed}); err != nil {
		return "", err
	}
	out := filepath.Join(root, "gpt2-tokenizer-f16.aneb")
	if _, err := pack.Pack(ctx, ckpt, pack.Options{Output: out, DType: "f16", Name: "gpt2-tokenizer", Force: true}); err != nil {
		return "", err
	}
	return out, nil
}
