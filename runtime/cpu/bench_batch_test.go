package cpu

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// BenchmarkBatchDecode measures what continuous batching buys: decode steps of 1, 4, 8 and 16
// sequences in one runtime.Batch pass (each after its own 128-token prompt), on the full-size
// Qwen2.5-0.5B SYNTH-1 model as f16 and int8. tok/s counts every sequence's token, so the
// ratio to streams=1 is the throughput a server gains from running that many streams together:
//
//	go test -run '^$' -bench BatchDecode -benchtime 32x ./runtime/cpu/
func BenchmarkBatchDecode(b *testing.B) {
	for _, dt := range []string{"f16", "int8"} {
		for _, streams := range []int{1, 4, 8, 16} {
			b.Run(fmt.Sprintf("%s/streams=%d", dt, streams), func(b *testing.B) {
				benchBatchDecode(b, dt, streams)
			})
		}
	}
}

var qwen05BDType = map[string]func() (string, error){
	"f16":  qwen05B,
	"int8": sync.OnceValues(func() (string, error) { return buildQwen05B("int8") }),
}

// buildQwen05B packs the full-size Qwen2.5-0.5B SYNTH-1 checkpoint (seed 1) as dtype.
func buildQwen05B(dtype string) (string, error) {
	cfgPath, err := testmodel.Config("qwen2.5-0.5b")
	if err != nil {
		return "", err
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return "", err
	}
	return testmodel.Build(cfg, 1, "qwen2.5-0.5b", dtype)
}

func benchBatchDecode(b *testing.B, dtype string, streams int) {
	path, err := qwen05BDType[dtype]()
	if err != nil {
		b.Fatal(err)
	}
	m, err := runtime.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	be, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	const ctx, start = 1024, 128
	batch, err := be.NewBatch(streams, streams)
	if err != nil {
		b.Fatal(err)
	}
	defer batch.Close()
	steps := make([]runtime.BatchStep, streams)
	for i := range steps {
		st, err := be.NewState(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		logits := make([]float32, m.Config.VocabSize)
		p := prompt(start)
		p[0] += i // distinct prompts
		if err := st.Forward(p, 0, logits); err != nil {
			b.Fatal(err)
		}
		steps[i] = runtime.BatchStep{State: st, Tokens: []int{42 + i}, Pos: start, Logits: logits}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := batch.Forward(steps); err != nil {
			b.Fatal(err)
		}
		for j := range steps {
			if steps[j].Pos++; steps[j].Pos == ctx {
				steps[j].Pos = start // reuse the cache: later positions overwrite
			}
		}
	}
	b.ReportMetric(float64(b.N*streams)/b.Elapsed().Seconds(), "tok/s")
}
