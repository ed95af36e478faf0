package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/synth"
)

func newSynthCmd() *cobra.Command {
	var (
		configPath, out, tokDir string
		seed                    uint64
		quiet                   bool
	)
	cmd := &cobra.Command{
		Use:   "synth --config config.json --seed N -o DIR [--tokenizer-dir D]",
		Short: "Write a SYNTH-1 checkpoint: deterministic synthetic weights for a config",
		Long: `synth writes a Hugging Face checkpoint directory whose weights are generated
deterministically from the config (SYNTH-1, bit-identical to the Python reference): config.json as
given, model.safetensors in BF16, and the tokenizer files from --tokenizer-dir (default: the real
Qwen2.5/Qwen3 tokenizer built into anepack).`,
		Args: cli.Args(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if configPath == "" || out == "" {
				return fmt.Errorf("synth needs --config and -o")
			}
			cfg, err := os.ReadFile(configPath)
			if err != nil {
				return err
			}
			tok, err := tokenizerFiles(tokDir)
			if err != nil {
				return err
			}
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			start := time.Now()
			var prog *cli.Progress
			err = synth.WriteCheckpoint(ctx, out, cfg, tok, synth.Options{Seed: seed, Progress: func(done, total int64) {
				if prog == nil {
					prog = cli.NewProgress("generating weights", total, true, quiet)
				}
				prog.Set(done, total)
			}})
			if err != nil {
				return fmt.Errorf("%s: %w", configPath, err)
			}
			if prog != nil {
				prog.Finish()
			}
			if !quiet {
				fmt.Fprintf(os.Stderr, "wrote SYNTH-1 checkpoint %s (seed %d) in %.2fs\n", out, seed, time.Since(start).Seconds())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "Hugging Face config.json to generate weights for")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "SYNTH-1 seed")
	cmd.Flags().StringVarP(&out, "output", "o", "", "checkpoint directory to write")
	cmd.Flags().StringVar(&tokDir, "tokenizer-dir", "", "directory with tokenizer.json and tokenizer_config.json, or vocab.json and merges.txt (default: built-in Qwen tokenizer)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// tokenizerFiles reads the tokenizer files to copy, from dir or the built-in Qwen tokenizer.
func tokenizerFiles(dir string) (map[string][]byte, error) {
	if dir == "" {
		return qwentok.Files()
	}
	files := map[string][]byte{}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			files[name] = b
			continue
		}
		if !os.IsNotExist(err) {
			return nil, err
		}
	}
	// The same choice packing makes: tokenizer.json with tokenizer_config.json, or GPT-2-style
	// vocab.json + merges.txt.
	switch {
	case files["tokenizer.json"] != nil && files["tokenizer_config.json"] == nil:
		return nil, fmt.Errorf("--tokenizer-dir %s: missing tokenizer_config.json", dir)
	case files["tokenizer.json"] == nil && (files["vocab.json"] == nil || files["merges.txt"] == nil):
		return nil, fmt.Errorf("--tokenizer-dir %s: missing tokenizer.json (or vocab.json and merges.txt)", dir)
	}
	return files, nil
}
