package ane

import (
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testmodel.Cleanup()
	os.Exit(code)
}

// Tolerances of the simulated ANE path against the CPU backend (float32) and Hugging Face
// (float32). The programs see fp16 activations and round every result to fp16 (docs/ane.md:
// fp16 datapath), so a logit of magnitude ~4 carries an fp16 rounding of ~2e-3 at the LM head
// alone, plus the error carried by the residual stream through the layers. The largest
// difference measured on the goldens, printed by TestSimGolden, is 4.3e-3; simTol leaves
// room for other CPUs' float32 rounding (FMA) in the sim and the CPU backend.
const (
	// simTol bounds every compared logit (the CPU's top ids, HF's listed ids); the argmax must
	// equal HF's where HF's top-1/top-2 gap exceeds 2*simTol.
	simTol = 2e-2
	// decodeSteps bounds the teacher-forced decode steps per case, and prefillRows the prompt
	// positions whose logits are compared: each costs ~7 ms in the sim (the 151936-row LM
	// head), and the attention of the last positions reads every earlier one.
	decodeSteps = 6
	prefillRows = 32
)

// openBoth opens the golden bundle with the CPU backend and an ane backend with opts.
func openBoth(t testing.TB, name, dtype string, opts Options) (*runtime.Model, *cpu.Backend, *Backend) {
	t.Helper()
	m, err := runtime.Open(testmodel.Bundle(t, name, dtype))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := cpu.New(m, cpu.Options{Threads: 2})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	if opts.Threads == 0 {
		opts.Threads = 2
	}
	sb, err := New(m, opts)
	if err != nil {
		cb.Close()
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sb.Close()
		cb.Close()
		m.Close()
	})
	return m, cb, sb
}

// diff compares one row of sim logits with the CPU's and with HF's listed (id, logit) pairs:
// the CPU's top k ids and HF's ids must agree within tol. It returns the largest difference
// from each reference.
func diff(sim, ref []float32, hf [][2]float64, k int, tol float64) (dCPU, dHF float64, err error) {
	for _, id := range topK(ref, k) {
		d := math.Abs(float64(sim[id] - ref[id]))
		dCPU = max(dCPU, d)
		if d > tol && err == nil {
			err = fmt.Errorf("id %d: sim %.5f, cpu %.5f (diff %.2e)", id, sim[id], ref[id], d)
		}
	}
	for _, p := range hf {
		id := int(p[0])
		d := math.Abs(float64(sim[id]) - p[1])
		dHF = max(dHF, d)
		if d > tol && err == nil {
			err = fmt.Errorf("id %d: sim %.5f, HF %.5f (diff %.2e)", id, sim[id], p[1], d)
		}
	}
	if gap := hf[0][1] - hf[1][1]; gap > 2*tol {
		if got := argmax(sim); got != int(hf[0][0]) && err == nil {
			err = fmt.Errorf("argmax %d; HF's is %d (gap %.4f)", got, int(hf[0][0]), gap)
		}
	}
	return dCPU, dHF, err
}

// TestSimGolden runs every golden prompt through the sim backend (the bundle's own MIL
// programs and blobs) and the CPU backend: one batched prefill (the 130-token prompt uses the
// 256 bucket, the 700-token one 512 + 256), logits at the last (up to 32) positions HF
// recorded, then
// teacher-forced decode steps through the S=32 programs with one live column. The sim must
// match the CPU's top-8 and HF's listed logits within simTol and HF's argmax where its gap
// exceeds 2*simTol.
func TestSimGolden(t *testing.T) {
	for _, name := range testmodel.Models {
		g := testmodel.LoadGolden(t, name)
		for _, dtype := range []string{"f16"} { // f32 bundles carry no programs (TestF32HasNoPrograms)
			t.Run(name+"/"+dtype, func(t *testing.T) {
				m, cb, sb := openBoth(t, name, dtype, Options{Eval: EvalSim})
				vocab := m.Config.VocabSize
				var worstCPU, worstHF float64
				for _, c := range g.Cases {
					steps := min(decodeSteps, len(c.GeneratedIDs))
					ctx := len(c.PromptIDs) + steps
					cs, err := cb.NewState(ctx)
					if err != nil {
						t.Fatal(err)
					}
					ss, err := sb.NewState(ctx)
					if err != nil {
						t.Fatal(err)
					}
					np := min(len(c.PrefillTop4), prefillRows)
					hf := c.PrefillTop4[len(c.PrefillTop4)-np:]
					want := make([]float32, np*vocab)
					got := make([]float32, np*vocab)
					if err := cs.Forward(c.PromptIDs, 0, want); err != nil {
						t.Fatal(err)
					}
					if err := ss.Forward(c.PromptIDs, 0, got); err != nil {
						t.Fatal(err)
					}
					first := len(c.PromptIDs) - np
					for j := 0; j < np; j++ {
						dc, dh, err := diff(got[j*vocab:(j+1)*vocab], want[j*vocab:(j+1)*vocab], hf[j], 4, simTol)
						worstCPU, worstHF = max(worstCPU, dc), max(worstHF, dh)
						if err != nil {
							t.Errorf("%s: prefill position %d: %v", c.Name, first+j, err)
						}
					}
					want, got = slices.Clone(want[(np-1)*vocab:]), slices.Clone(got[(np-1)*vocab:])
					pos := len(c.PromptIDs)
					for j := 0; j < steps; j++ {
						if j > 0 {
							id := c.GeneratedIDs[j-1 : j]
							if err := cs.Forward(id, pos, want); err != nil {
								t.Fatal(err)
							}
							if err := ss.Forward(id, pos, got); err != nil {
								t.Fatal(err)
							}
							pos++
						}
						dc, dh, err := diff(got, want, c.StepsTop8[j], 8, simTol)
						worstCPU, worstHF = max(worstCPU, dc), max(worstHF, dh)
						if err != nil {
							t.Errorf("%s: decode step %d: %v", c.Name, j, err)
						}
					}
					cs.Close()
					ss.Close()
				}
				st := sb.Stats()
				t.Logf("largest logit difference: %.2e from the CPU backend, %.2e from HF; buckets %v, %d programs loaded", worstCPU, worstHF, st.Buckets, st.Loaded)
			})
		}
	}
}

// topK returns the ids of the k largest logits, largest first.
func topK(logits []float32, k int) []int {
	ids := make([]int, 0, k+1)
	for id, v := range logits {
		if len(ids) == k && v <= logits[ids[k-1]] {
			continue
		}
		i := len(ids)
		for i > 0 && logits[ids[i-1]] < v {
			i--
		}
		ids = slices.Insert(ids, i, id)
		if len(ids) > k {
			ids = ids[:k]
		}
	}
	return ids
}

func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// TestSimBatchMatchesAlone runs every golden model's prompts through one runtime.Batch of the
// sim backend (testmodel.CheckBatch: sequences joining and leaving, prompt chunks beside decode
// steps, each pass one evaluation of the bundle's programs for all its rows) and requires each
// sequence's logits alone within simTol and the same greedy tokens.
func TestSimBatchMatchesAlone(t *testing.T) {
	for _, name := range testmodel.Models {
		t.Run(name, func(t *testing.T) {
			m, _, sb := openBoth(t, name, "f16", Options{Eval: EvalSim})
			worst, err := testmodel.CheckBatch(m, sb, testmodel.LoadGolden(t, name), simTol)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("largest difference from the same sequence alone: %.2e", worst)
		})
	}
}
