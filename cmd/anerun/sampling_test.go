package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/runtime"
)

// TestSamplingDefaults: flags not given keep the model's sampling defaults and its
// max_new_tokens (else defaultMaxTokens), whatever the flags' own zero values; flags given win,
// --max-tokens 0 included (no limit).
func TestSamplingDefaults(t *testing.T) {
	m, err := runtime.Open(bundle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	parse := func(args ...string) *samplingFlags {
		var s samplingFlags
		cmd := &cobra.Command{Use: "x"}
		s.register(cmd)
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	model := runtime.DefaultSampling(m.Generation())
	wantMax := defaultMaxTokens
	if n := m.Generation().MaxNewTokens; n != nil && *n > 0 {
		wantMax = *n
	}
	s := parse()
	got, err := s.resolve(m)
	if err != nil {
		t.Fatal(err)
	}
	if got.TopP != model.TopP || got.RepetitionPenalty != model.RepetitionPenalty || got.Temperature != model.Temperature || got.TopK != model.TopK || got.MinP != model.MinP {
		t.Errorf("no flags: %+v, want the model's %+v", got, model)
	}
	if n := s.maxNewTokens(m); n != wantMax {
		t.Errorf("no --max-tokens: %d, want %d", n, wantMax)
	}
	s = parse("--top-p", "0.5", "--repeat-penalty", "1.25", "-n", "0")
	if got, err = s.resolve(m); err != nil || got.TopP != 0.5 || got.RepetitionPenalty != 1.25 {
		t.Errorf("flags given: %+v, %v", got, err)
	}
	if n := s.maxNewTokens(m); n != 0 {
		t.Errorf("--max-tokens 0: %d", n)
	}
}
