package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInput runs the command on bad arguments and broken checkpoints: each is refused with
// an error naming the file, the field or the argument, and the output is left as it was (a
// previous file untouched, or none at all) with no temporary file beside it.
func TestBadInput(t *testing.T) {
	good := writeCheckpoint(t, families["qwen2"])
	// link makes a checkpoint folder holding good's files but those named in skip, with
	// config.json replaced when cfg is not nil.
	link := func(t *testing.T, cfg []byte, skip ...string) string {
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			if strings.Contains(strings.Join(skip, " "), f) || f == "config.json" && cfg != nil {
				continue
			}
			if err := os.Symlink(filepath.Join(good, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		if cfg != nil {
			if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	qwenCfg, err := os.ReadFile(filepath.Join(good, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	withArch := func(a string) []byte {
		return bytes.Replace(qwenCfg, []byte(`"Qwen2ForCausalLM"`), []byte(a), 1)
	}
	cases := []struct {
		name string
		args func(t *testing.T, out string) []string
		code int
		want []string
	}{
		{"no arguments", func(*testing.T, string) []string { return nil }, 2,
			[]string{"expected 2 or 3 arguments, got 0", "usage: go run ./bench/mkgguf"}},
		{"unknown type", func(_ *testing.T, out string) []string { return []string{good, out, "q4_0"} }, 2,
			[]string{`type "q4_0" is not one mkgguf writes; expected f16, bf16 or f32`}},
		{"no config.json", func(t *testing.T, out string) []string { return []string{t.TempDir(), out} }, 1,
			[]string{"no config.json: expected a Hugging Face checkpoint directory"}},
		{"architecture anepack packs", func(t *testing.T, out string) []string {
			return []string{link(t, withArch(`"Gemma3ForCausalLM"`)), out}
		}, 1, []string{`config.json: field "architectures": "Gemma3ForCausalLM" is not supported by mkgguf; supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM`}},
		{"unknown architecture", func(t *testing.T, out string) []string {
			return []string{link(t, withArch(`"MistralForCausalLM"`)), out}
		}, 1, []string{`field "architectures": "MistralForCausalLM" is not supported by mkgguf`}},
		{"no architectures", func(t *testing.T, out string) []string {
			return []string{link(t, bytes.Replace(qwenCfg, []byte(`"architectures"`), []byte(`"archs"`), 1)), out}
		}, 1, []string{`config.json: field "architectures": missing`}},
		{"config field", func(t *testing.T, out string) []string {
			return []string{link(t, bytes.Replace(qwenCfg, []byte(`"hidden_size": 64`), []byte(`"hidden_size": -64`), 1)), out}
		}, 1, []string{`config.json: field "hidden_size"`}},
		{"no weights", func(t *testing.T, out string) []string { return []string{link(t, nil, "model.safetensors"), out} }, 1,
			[]string{"no model.safetensors"}},
		{"no tokenizer.json", func(t *testing.T, out string) []string { return []string{link(t, nil, "tokenizer.json"), out} }, 1,
			[]string{"no tokenizer.json"}},
		{"weights of another shape", func(t *testing.T, out string) []string {
			return []string{link(t, bytes.Replace(qwenCfg, []byte(`"intermediate_size": 160`), []byte(`"intermediate_size": 192`), 1)), out}
		}, 1, []string{"model.safetensors: tensor model.layers.0.mlp.gate_proj.weight: shape [160 64] does not match config.json; expected [192 64]"}},
		{"tokenizer larger than the vocabulary", func(t *testing.T, out string) []string {
			r := strings.NewReplacer(`"vocab_size": 151936`, `"vocab_size": 1000`, `"bos_token_id": 151643`, `"bos_token_id": 0`, `"eos_token_id": 151645`, `"eos_token_id": 1`)
			cfg := []byte(r.Replace(string(qwenCfg)))
			return []string{writeCheckpointJSON(t, cfg, "qwen", 1, "small-vocab"), out}
		}, 1, []string{"tokenizer.json: token ids reach 151668; config.json's vocab_size is 1000"}},
	}
	for _, c := range cases {
		for _, previous := range []bool{false, true} {
			name := c.name
			if previous {
				name += "/over an existing file"
			}
			t.Run(name, func(t *testing.T) {
				outDir := t.TempDir()
				out := filepath.Join(outDir, "model.gguf")
				if previous {
					if err := os.WriteFile(out, []byte("previous"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				var stdout, stderr bytes.Buffer
				code := run(c.args(t, out), &stdout, &stderr)
				if code != c.code {
					t.Errorf("exit %d; want %d (stderr %q)", code, c.code, stderr.String())
				}
				for _, w := range c.want {
					if !strings.Contains(stderr.String(), w) {
						t.Errorf("stderr %q lacks %q", stderr.String(), w)
					}
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout %q; want nothing", stdout.String())
				}
				entries, _ := os.ReadDir(outDir)
				want := 0
				if previous {
					want = 1
					if b, _ := os.ReadFile(out); string(b) != "previous" {
						t.Errorf("the existing output file was changed")
					}
				}
				if len(entries) != want {
					var names []string
					for _, e := range entries {
						names = append(names, e.Name())
					}
					t.Errorf("output folder holds %v; want %d entries", names, want)
				}
			})
		}
	}
}
