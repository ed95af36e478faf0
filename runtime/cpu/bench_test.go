package cpu

import (
	"sync"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// Benchmarks of the forward pass on the tiny golden model and on the full-size Qwen2.5-0.5B
// SYNTH-1 model (about 1 GB as f16, built on first use into the test's temp directory; select
// it with -bench to pay for it):
//
//	go test -run '^$' -bench 'Decode|Prefill' -benchtime 64x ./runtime/cpu/
//
// Decode reports tokens/s of single-token steps after a 128-token prompt; Prefill reports
// tokens/s of 128-token batched prompts.

var qwen05B = sync.OnceValues(func() (string, error) { return buildQwen05B("f16") })

func benchModel(b *testing.B, name string) (*runtime.Model, *Backend) {
	b.Helper()
	var path string
	if name == "qwen2.5-0.5b" {
		p, err := qwen05B()
		if err != nil {
			b.Fatal(err)
		}
		path = p
	} else {
		path = testmodel.Bundle(b, name, "f16")
	}
	m, err := runtime.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	be, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		be.Close()
		m.Close()
	})
	return m, be
}

var benchModels = []string{"qwen2-tiny", "qwen2.5-0.5b"}

func prompt(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i*7919 + 13) % 150000
	}
	return p
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			m, be := benchModel(b, name)
			const ctx, start = 1024, 128
			st, err := be.NewState(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			logits := make([]float32, m.Config.VocabSize)
			if err := st.Forward(prompt(start), 0, logits); err != nil {
				b.Fatal(err)
			}
			tok := []int{42}
			pos := start
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if pos == ctx {
					pos = start // reuse the cache: later positions overwrite
				}
				if err := st.Forward(tok, pos, logits); err != nil {
					b.Fatal(err)
				}
				pos++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

func BenchmarkPrefill(b *testing.B) {
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			m, be := benchModel(b, name)
			const n = 128
			st, err := be.NewState(n)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			logits := make([]float32, m.Config.VocabSize)
			p := prompt(n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := st.Forward(p, 0, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
