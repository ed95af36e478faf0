package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/anepack/anepack/runtime"
)

// samplingFlags are the generation flags. Unset flags keep the model's defaults (its
// generation_config.json, see runtime.DefaultSampling).
type samplingFlags struct {
	maxTokens   int
	temperature float64
	topK        int
	topP        float64
	minP        float64
	repeat      float64
	seed        int64
	stop        []string
	flags       *pflag.FlagSet
}

// defaultMaxTokens bounds a generation when neither --max-tokens nor the model says otherwise.
const defaultMaxTokens = 256

func (s *samplingFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	s.flags = f
	f.IntVarP(&s.maxTokens, "max-tokens", "n", 0, fmt.Sprintf("most tokens to generate; 0: until an end token or the context is full (default: the model's max_new_tokens, else %d)", defaultMaxTokens))
	f.Float64Var(&s.temperature, "temperature", 0, "sampling temperature; 0 is greedy (default: the model's generation config, else greedy)")
	f.IntVar(&s.topK, "top-k", 0, "keep only the K most likely tokens; 0 disables (default: the model's)")
	f.Float64Var(&s.topP, "top-p", 0, "nucleus sampling: keep the most likely tokens up to this probability mass (default: the model's)")
	f.Float64Var(&s.minP, "min-p", 0, "drop tokens less likely than this fraction of the most likely one (default: the model's)")
	f.Float64Var(&s.repeat, "repeat-penalty", 0, "penalize tokens already in the conversation; 1 disables (default: the model's)")
	f.Int64Var(&s.seed, "seed", -1, "random seed for reproducible sampling (-1: a new one each run)")
	f.StringArrayVar(&s.stop, "stop", nil, "stop when this text appears (repeatable); the text is not printed")
}

// resolve returns the sampling parameters: the model's defaults, overridden by the flags given.
// Giving --temperature > 0 turns sampling on even when the model's config is greedy.
func (s *samplingFlags) resolve(m *runtime.Model) (runtime.Sampling, error) {
	if err := checkGeneration(m); err != nil {
		return runtime.Sampling{}, err
	}
	cfg := runtime.DefaultSampling(m.Generation())
	changed := s.flags.Changed
	if changed("temperature") {
		cfg.Temperature = s.temperature
	}
	if changed("top-k") {
		cfg.TopK = s.topK
	}
	if changed("top-p") {
		cfg.TopP = s.topP
	}
	if changed("min-p") {
		cfg.MinP = s.minP
	}
	if changed("repeat-penalty") {
		cfg.RepetitionPenalty = s.repeat
	}
	if s.seed >= 0 {
		cfg.Seed = uint64(s.seed)
	} else {
		var b [8]byte
		crand.Read(b[:])
		cfg.Seed = binary.LittleEndian.Uint64(b[:])
	}
	return cfg, cfg.Check()
}

// maxNewTokens is --max-tokens, or when the flag was not given the model's max_new_tokens, else
// defaultMaxTokens.
func (s *samplingFlags) maxNewTokens(m *runtime.Model) int {
	if s.flags.Changed("max-tokens") {
		return s.maxTokens
	}
	if n := m.Generation().MaxNewTokens; n != nil && *n > 0 {
		return *n
	}
	return defaultMaxTokens
}

// checkGeneration refuses a bundle whose generation defaults are out of range, saying so:
// otherwise the sampler's own check would report "temperature -1" as if a flag were wrong.
func checkGeneration(m *runtime.Model) error {
	if err := m.Generation().Check(); err != nil {
		return fmt.Errorf("%s: the bundle's generation config is invalid: %w", m.Name, err)
	}
	return nil
}
