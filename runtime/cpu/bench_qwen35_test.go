package cpu

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// Benchmarks of the Qwen3.5-2B shape (configs/qwen3.5-2b.json: 18 Gated DeltaNet layers and 6
// gated attention layers, 1.88 B parameters, a 3.5 GiB f16 bundle built on first use into the
// test's temp directory, or the one $ANEPACK_QWEN35_BUNDLE names), on 2 threads:
//
//	go test -run '^$' -bench 'Qwen35' -benchtime 32x -timeout 60m ./runtime/cpu/
//
// Prefill reports tokens/s of 128-token prompts; Decode/ctxN tokens/s of single-token steps
// after a prompt of N tokens (the attention layers read N cached positions per step, the
// DeltaNet layers a state of fixed size).

var qwen35B = sync.OnceValues(func() (string, error) {
	if path := os.Getenv("ANEPACK_QWEN35_BUNDLE"); path != "" {
		return path, nil // a bundle of the same config packed before (bench/qwen35.sh writes one)
	}
	cfgPath, err := testmodel.Config("qwen3.5-2b")
	if err != nil {
		return "", err
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return "", err
	}
	return testmodel.Build(cfg, 1, "qwen3.5-2b", "f16")
})

func qwen35Bench(b *testing.B) (*runtime.Model, *Backend) {
	b.Helper()
	path, err := qwen35B()
	if err != nil {
		b.Fatal(err)
	}
	m, err := runtime.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	be, err := New(m, Options{Threads: 2})
	if err != nil {
		m.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		be.Close()
		m.Close()
	})
	return m, be
}

func BenchmarkQwen35Prefill(b *testing.B) {
	m, be := qwen35Bench(b)
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
}

func BenchmarkQwen35Decode(b *testing.B) {
	for _, ctx := range []int{16, 4096} {
		b.Run("ctx"+strconv.Itoa(ctx), func(b *testing.B) {
			m, be := qwen35Bench(b)
			st, err := be.NewState(ctx + b.N)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			logits := make([]float32, m.Config.VocabSize)
			if err := st.Forward(prompt(ctx), 0, logits); err != nil {
				b.Fatal(err)
			}
			tok := []int{42}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := st.Forward(tok, ctx+i, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(float64(be.RecurrentStateBytes()), "recurrent-bytes")
		})
	}
}
