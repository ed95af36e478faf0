package cpu

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// Benchmarks of the Qwen3.5-2B shape (configs/qwen3.5-2b.json: 18 Gated DeltaNet layers and 6
// gated attention layers, 1.88 B parameters, a 3.5 GiB f16 bundle built on first use into the
// test's temp directory, or the one $ANEPACK_QWEN35_BUNDLE names), on 2 threads:
//
//	go test -run '^$' -bench 'Qwen35' -benchtime 32x -timeout 60m ./runtime/cpu/
//
// Prefill reports tokens/s of 128-token prompts; Decode the tokens/s of single-token steps after
// 16 and after 4096 tokens of context.

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

// decodeStates are the two sequences BenchmarkQwen35Decode steps, with their model and backend,
// prefilled once per process (the testing package calls a benchmark with b.N = 1 before the
// real run) and left open until the process ends.
var decodeStates struct {
	once    sync.Once
	m       *runtime.Model
	be      *Backend
	states  [2]runtime.State
	pos     [2]int
	prefill time.Duration
	err     error
}

// BenchmarkQwen35Decode decodes after 16 and after 4096 tokens of context, alternating one step
// of each so that both see the same machine load, and reports both rates (the attention layers
// read the cached positions, the DeltaNet layers a state of fixed size) and the prefill rate of
// the 4096-token prompt. Run it with -benchtime Nx, N <= 1024.
func BenchmarkQwen35Decode(b *testing.B) {
	ds := &decodeStates
	ds.once.Do(func() {
		path, err := qwen35B()
		if err == nil {
			ds.m, err = runtime.Open(path)
		}
		if err == nil {
			ds.be, err = New(ds.m, Options{Threads: 2})
		}
		if ds.err = err; err != nil {
			return
		}
		logits := make([]float32, ds.m.Config.VocabSize)
		for i, ctx := range []int{16, 4096} {
			if ds.states[i], ds.err = ds.be.NewState(ctx + 1025); ds.err != nil {
				return
			}
			start := time.Now()
			if ds.err = ds.states[i].Forward(prompt(ctx), 0, logits); ds.err != nil {
				return
			}
			ds.prefill, ds.pos[i] = time.Since(start), ctx
		}
	})
	if ds.err != nil {
		b.Fatal(ds.err)
	}
	logits := make([]float32, ds.m.Config.VocabSize)
	var took [2]time.Duration
	tok := []int{42}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ds.states {
			start := time.Now()
			if err := ds.states[j].Forward(tok, ds.pos[j], logits); err != nil {
				b.Fatal(err)
			}
			took[j] += time.Since(start)
			ds.pos[j]++
		}
	}
	b.ReportMetric(float64(b.N)/took[0].Seconds(), "tok/s@16")
	b.ReportMetric(float64(b.N)/took[1].Seconds(), "tok/s@4096")
	b.ReportMetric(4096/ds.prefill.Seconds(), "prefill-tok/s@4096")
	b.ReportMetric(float64(ds.be.RecurrentStateBytes()), "recurrent-bytes")
}
