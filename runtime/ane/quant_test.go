package ane

import (
	"testing"

	"github.com/anepack/anepack/runtime/testmodel"
)

// quantTol bounds the logits of the sim against the CPU on quantized bundles. Both read the same
// codes, scales and offsets, but the CPU kernels quantize activations to int8 per block of 32
// (W8A8, W4A8: about 1% relative error per product, docs/quantization.md) where the sim keeps
// fp16 activations; on the golden models (logits up to ~5) the largest difference measured is
// 8.5e-2.
const quantTol = 0.2

// TestSimQuantized runs int8 and int4 bundles of golden models through the sim (the constexpr
// programs over the planar records) and the CPU backend (the int8/int4 kernels over the same
// bytes) and compares the top logits of a prompt's last positions and of decode steps.
func TestSimQuantized(t *testing.T) {
	for _, name := range []string{"qwen2-tiny", "llama3-tiny", "gpt2-tiny", "gemma3-tiny"} {
		g := testmodel.LoadGolden(t, name)
		c := g.Cases[2] // the ~130-token prompt
		for _, dtype := range []string{"int8", "int4"} {
			t.Run(name+"/"+dtype, func(t *testing.T) {
				m, cb, sb := openBoth(t, name, dtype, Options{Eval: EvalSim})
				vocab := m.Config.VocabSize
				cs, _ := cb.NewState(len(c.PromptIDs) + 8)
				ss, _ := sb.NewState(len(c.PromptIDs) + 8)
				defer cs.Close()
				defer ss.Close()
				const rows = 8
				want, got := make([]float32, rows*vocab), make([]float32, rows*vocab)
				if err := cs.Forward(c.PromptIDs, 0, want); err != nil {
					t.Fatal(err)
				}
				if err := ss.Forward(c.PromptIDs, 0, got); err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				compare := func(what string, w, gg []float32) {
					for _, id := range topK(w, 8) {
						d := float64(abs32(w[id] - gg[id]))
						worst = max(worst, d)
						if d > quantTol {
							t.Errorf("%s: id %d: sim %.4f, cpu %.4f", what, id, gg[id], w[id])
						}
					}
				}
				for j := 0; j < rows; j++ {
					compare("prefill", want[j*vocab:(j+1)*vocab], got[j*vocab:(j+1)*vocab])
				}
				pos := len(c.PromptIDs)
				for step := 0; step < 4; step++ {
					id := []int{argmax(want[(rows-1)*vocab:])}
					if err := cs.Forward(id, pos, want[(rows-1)*vocab:]); err != nil {
						t.Fatal(err)
					}
					if err := ss.Forward(id, pos, got[(rows-1)*vocab:]); err != nil {
						t.Fatal(err)
					}
					compare("decode", want[(rows-1)*vocab:], got[(rows-1)*vocab:])
					pos++
				}
				t.Logf("largest difference sim vs cpu over the top 8 logits: %.3e", worst)
			})
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestConstexprExpand: the fallback that expands quantized weights to dense fp16 before
// compiling gives the sim's output bit for bit (the values are the ones the constexpr ops
// define), on int8 and int4 bundles.
func TestConstexprExpand(t *testing.T) {
	for _, dtype := range []string{"int8", "int4"} {
		m, _, native := openBoth(t, "qwen2-tiny", dtype, Options{Eval: EvalSim})
		_, _, expand := openBoth(t, "qwen2-tiny", dtype, Options{Eval: EvalSim, Constexpr: ConstexprExpand})
		vocab := m.Config.VocabSize
		ids := prompt(t, 40)
		a, b := make([]float32, vocab), make([]float32, vocab)
		for i, be := range []*Backend{native, expand} {
			st, err := be.NewState(48)
			if err != nil {
				t.Fatal(err)
			}
			out := []([]float32){a, b}[i]
			if err := st.Forward(ids, 0, out); err != nil {
				t.Fatal(err)
			}
			if err := st.Forward([]int{7}, len(ids), out); err != nil {
				t.Fatal(err)
			}
			st.Close()
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: logit %d is %v expanded, %v through the constexpr ops", dtype, i, b[i], a[i])
			}
		}
	}
	if _, err := New(nil, Options{Constexpr: "lut"}); err == nil {
		t.Error("an unknown constexpr mode was accepted")
	}
}

// TestConstexprFinding reads the probe's int8/uint4 results.
func TestConstexprFinding(t *testing.T) {
	r := func(w string, ok bool) ProbeResult { return ProbeResult{Name: w, Weights: w, OK: ok} }
	for _, tc := range []struct {
		results []ProbeResult
		want    string
	}{
		{[]ProbeResult{r("fp16", true)}, ""},
		{[]ProbeResult{r("int8", true), r("uint4", true)}, ConstexprNative},
		{[]ProbeResult{r("int8", true), r("uint4", false)}, ConstexprExpand},
	} {
		if got := ConstexprFinding(tc.results); got != tc.want {
			t.Errorf("%+v: %q; want %q", tc.results, got, tc.want)
		}
	}
}
