package ane

import (
	"testing"

	"github.com/anepack/anepack/arch"
)

// flops returns the multiply-adds (x2) of the programs for n tokens and rows logits rows: the
// QKV, O and FFN projections of every layer and the LM head. Attention (on the CPU) is left
// out: it is not program work.
func flops(c *arch.Config, n, rows int) float64 {
	h, q, kv, in := c.HiddenSize, c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim, c.IntermediateSize
	perLayer := h*(q+2*kv) + q*h + 3*h*in
	return 2 * (float64(n)*float64(c.NumHiddenLayers*perLayer) + float64(rows)*float64(h*c.VocabSize))
}

// BenchmarkSimPrefill runs a 128-token prompt (one 128 bucket) through the sim backend on the
// tiny golden model, logits of the last token only, and reports tokens/s and the programs'
// GFLOP/s.
//
//	go test -run '^$' -bench Sim ./runtime/ane
func BenchmarkSimPrefill(b *testing.B) {
	m, _, sb := openBoth(b, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	ids := prompt(b, 128)
	st, err := sb.NewState(len(ids))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	logits := make([]float32, m.Config.VocabSize)
	if err := st.Forward(ids, 0, logits); err != nil { // loads the programs
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Forward(ids, 0, logits); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(len(ids))/s, "tokens/s")
	b.ReportMetric(flops(m.Config, len(ids), 1)/s/1e9, "GFLOP/s")
}

// BenchmarkSimDecode runs decode steps (the S = 32 programs with one live column, and the whole
// 151936-row LM head) after a 16-token prompt.
func BenchmarkSimDecode(b *testing.B) {
	m, _, sb := openBoth(b, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	ids := prompt(b, 16)
	st, err := sb.NewState(len(ids) + 1)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	logits := make([]float32, m.Config.VocabSize)
	if err := st.Forward(ids, 0, logits); err != nil {
		b.Fatal(err)
	}
	tok := []int{42}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Forward(tok, len(ids), logits); err != nil { // the same position each time
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(1/s, "tokens/s")
	b.ReportMetric(flops(m.Config, 1, 1)/s/1e9, "GFLOP/s")
}
