package pack

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/testtok"
	"github.com/anepack/anepack/synth"
	"github.com/anepack/anepack/tokenizer"
)

// gpt2Checkpoint writes a SYNTH-1 Qwen2 model with GPT-2's vocabulary (50257 ids) and GPT-2's
// tokenizer as a repository without tokenizer.json has it: vocab.json, merges.txt and
// tokenizer_config.json.
func gpt2Checkpoint(t *testing.T) string {
	t.Helper()
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join("..", "configs", "qwen2-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["vocab_size"], cfg["bos_token_id"], cfg["eos_token_id"] = 50257, 50256, 50256
	cfgJSON, _ := json.Marshal(cfg)
	files, err := testtok.GPT2SlowFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gpt2-ckpt")
	if err := synth.WriteCheckpoint(context.Background(), dir, cfgJSON, files, synth.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPackVocabMerges packs a checkpoint whose tokenizer is vocab.json + merges.txt: the bundle's
// tokenizer is GPT-2's, and the files it came from are kept and recorded.
func TestPackVocabMerges(t *testing.T) {
	dir := gpt2Checkpoint(t)
	res, b := packTo(t, dir, Options{NoPrograms: true})
	s, _ := b.Section(TokenizerSection)
	data, _ := b.Bytes(s)
	tk, err := tokenizer.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("Hello world<|endoftext|>"); !slices.Equal(got, []int{15496, 995, 50256}) {
		t.Errorf("Encode = %v", got)
	}
	if tk.EOS() != 50256 || tk.Info().HasChatTemplate || tk.Info().PreTokenizer != "gpt2" {
		t.Errorf("Info = %+v", tk.Info())
	}
	for _, name := range []string{VocabFile, MergesFile, TokenizerConfigFile} {
		if _, ok := b.Section(FilePrefix + name); !ok {
			t.Errorf("%s not kept verbatim", name)
		}
	}
	if _, ok := b.Section(FilePrefix + TokenizerFile); ok {
		t.Error("a tokenizer.json section appeared from nowhere")
	}
	var recorded []string
	for _, f := range res.Manifest.Provenance.Files {
		recorded = append(recorded, f.Name)
	}
	if !slices.Contains(recorded, VocabFile) || !slices.Contains(recorded, MergesFile) {
		t.Errorf("provenance lists %v", recorded)
	}
}

// TestPackVocabMergesErrors: a missing or broken GPT-2-style tokenizer stops packing with the
// file and what was expected.
func TestPackVocabMergesErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(dir string)
		want   string
	}{
		{"no merges.txt", func(d string) { os.Remove(filepath.Join(d, MergesFile)) },
			"tokenizer.json: missing; a checkpoint needs tokenizer.json, or vocab.json and merges.txt"},
		{"bad merge", func(d string) {
			os.WriteFile(filepath.Join(d, MergesFile), []byte("#version: 0.2\nĠ t\nĠt nosuchtoken\n"), 0o644)
		}, `merges.txt: line 3: "nosuchtoken" is not in vocab.json`},
		{"bad vocab", func(d string) { os.WriteFile(filepath.Join(d, VocabFile), []byte(`["a"]`), 0o644) },
			"vocab.json: expected a JSON object mapping tokens to ids"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := gpt2Checkpoint(t)
			c.mutate(dir)
			out := filepath.Join(t.TempDir(), "x.aneb")
			_, err := Pack(context.Background(), dir, Options{Output: out, NoPrograms: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to mention %q", err, c.want)
			}
		})
	}
}
