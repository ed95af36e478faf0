package ane

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// TestLinearInPrograms runs every group program of every layer of the Qwen3.5 golden model (its
// Gated DeltaNet layers' linear_attn_in and linear_attn_out, its attention layer's attn_qkv
// with the output gates and attn_o, the MLPs) in the sim, with LinearInOn = LinearInANE so
// that linear_attn_in runs on its programs too, and compares each with the CPU's float32
// products of the same weights: they must agree to fp16 precision (a few units of fp16
// rounding of the output's magnitude).
func TestLinearInPrograms(t *testing.T) {
	m, _, b := openBoth(t, "qwen3.5-tiny", "f16", Options{Eval: EvalSim, LinearInOn: LinearInANE})
	c, fam := m.Config, m.Family
	cp, err := cpu.NewProjections(m, b.pool)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cp.NewProjector(40)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := b.proj.NewProjector(40)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[string]bool{}
	for l := 0; l < c.NumHiddenLayers; l++ {
		for gi, g := range fam.Groups(c) {
			if !fam.LayerHasGroup(c, l, g) {
				continue
			}
			const n = 40 // two program calls: the 32 bucket and a second with 8 live columns
			x := make([]float32, n*g.In)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			want, got := make([]float32, n*g.Out), make([]float32, n*g.Out)
			if err := ref.Group(l, gi, x, n, want); err != nil {
				t.Fatal(err)
			}
			if err := sim.Group(l, gi, x, n, got); err != nil {
				t.Fatal(err)
			}
			worst, mag := 0.0, 0.0
			for i := range want {
				worst = max(worst, math.Abs(float64(got[i]-want[i])))
				mag = max(mag, math.Abs(float64(want[i])))
			}
			// fp16 keeps 11 bits: an output of magnitude mag is within mag/2048 per rounding;
			// the input's rounding and the program's own add a few more.
			if worst > 4*mag/2048 {
				t.Errorf("layer %d %s: largest difference %.3g at outputs up to %.3g", l, g.Name, worst, mag)
			}
			seen[g.Name] = true
		}
	}
	for _, g := range []string{arch.GroupLinearIn, arch.GroupLinearOut, arch.GroupQKV, arch.GroupO, arch.GroupMLP} {
		if !seen[g] {
			t.Errorf("no layer ran %s", g)
		}
	}
}

// TestLinearInOnCPU: by default the linear_attn_in programs are neither planned nor loaded (the
// CPU computes that group), and the bundle still carries them for LinearInANE.
func TestLinearInOnCPU(t *testing.T) {
	m, _, cpuIn := openBoth(t, "qwen3.5-tiny", "f16", Options{Eval: EvalSim, CompileBudget: -1})
	_, _, aneIn := openBoth(t, "qwen3.5-tiny", "f16", Options{Eval: EvalSim, CompileBudget: -1, LinearInOn: LinearInANE})
	linear := 3 // of the model's 4 layers
	buckets := len(cpuIn.Stats().Buckets)
	if d := aneIn.Stats().Planned - cpuIn.Stats().Planned; d != linear*buckets {
		t.Errorf("LinearInANE plans %d programs more than the default; want %d (one per DeltaNet layer and bucket)", d, linear*buckets)
	}
	for _, b := range []*Backend{cpuIn, aneIn} {
		st, err := b.NewState(64)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Forward(make([]int, 40), 0, make([]float32, m.Config.VocabSize)); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	// 40 tokens: the 64 bucket of 4 layers x 3 groups + the LM head's 5 chunks, less the
	// DeltaNet layers' linear_attn_in by default.
	lm := len(cpuIn.ps.lmRows)
	if got, want := cpuIn.Stats().Loaded, 4*3-linear+lm; got != want {
		t.Errorf("default: %d programs loaded; want %d", got, want)
	}
	if got, want := aneIn.Stats().Loaded, 4*3+lm; got != want {
		t.Errorf("LinearInANE: %d programs loaded; want %d", got, want)
	}
	if _, err := New(m, Options{Eval: EvalSim, LinearInOn: "gpu"}); err == nil {
		t.Error("LinearInOn \"gpu\" was accepted")
	}
}

// TestRecurrentAfterFailure: a pass that fails part of the way through the layers (here the
// compile budget runs out at the third layer) leaves the Gated DeltaNet layers' states at
// different positions, so the sequence can no longer continue from the position it had
// reached, only from a snapshot (here none: from 0).
func TestRecurrentAfterFailure(t *testing.T) {
	// Decode on the CPU loads no program; the first prompt pass needs the 512 bucket's: two
	// in each DeltaNet layer (linear_attn_in runs on the CPU), so a budget of 5 ends in layer 2.
	m, _, b := openBoth(t, "qwen3.5-tiny", "f16", Options{Eval: EvalSim, DecodeOn: DecodeCPU, CompileBudget: 5})
	st, err := b.NewState(100)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logits := make([]float32, m.Config.VocabSize)
	for pos := 0; pos < 3; pos++ {
		if err := st.Forward([]int{pos + 1}, pos, logits); err != nil {
			t.Fatal(err)
		}
	}
	r := st.(runtime.Resumer)
	if p := r.ResumeAt(3); p != 3 {
		t.Fatalf("ResumeAt(3) = %d after 3 decode steps", p)
	}
	if err := st.Forward(make([]int, 10), 3, logits); !errors.Is(err, ErrCompileBudget) {
		t.Fatalf("a 10-token pass with a budget of 5 programs: %v; want ErrCompileBudget", err)
	}
	if n := b.Stats().Loaded; n != 5 {
		t.Errorf("%d programs loaded; want 5", n)
	}
	if p := r.ResumeAt(3); p != 0 {
		t.Errorf("after the failed pass ResumeAt(3) = %d; want 0", p)
	}
}
