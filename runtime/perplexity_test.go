package runtime_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
)

func openCPU(t *testing.T, name, dtype string) (*runtime.Model, runtime.Backend) {
	t.Helper()
	m, err := runtime.Open(testmodel.Bundle(t, name, dtype))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{Threads: 2})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		m.Close()
	})
	return m, b
}

// TestPerplexity checks Perplexity against the definition computed here from one batched
// forward per chunk: exp of the mean negative log-likelihood of each chunk's second half; a
// model against itself has KL 0 and full top-1 agreement; against its int8 bundle a small KL.
func TestPerplexity(t *testing.T) {
	m, b := openCPU(t, "qwen2-tiny", "f16")
	tokens := make([]int, 130)
	for i := range tokens {
		tokens[i] = (i*7919 + 13) % 150000
	}
	const n = 64
	res, err := runtime.Perplexity(context.Background(), m, b, tokens, runtime.PerplexityOptions{Context: n, BOS: -1, Reference: m, ReferenceBackend: b})
	if err != nil {
		t.Fatal(err)
	}
	vocab := m.Config.VocabSize
	var nll float64
	count := 0
	for c := 0; c < 2; c++ { // 130 tokens hold two whole chunks of 64
		st, _ := b.NewState(n)
		logits := make([]float32, n*vocab)
		if err := st.Forward(tokens[c*n:(c+1)*n], 0, logits); err != nil {
			t.Fatal(err)
		}
		st.Close()
		for j := n / 2; j < n-1; j++ {
			row := logits[j*vocab : (j+1)*vocab]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = max(mx, float64(v))
			}
			var s float64
			for _, v := range row {
				s += math.Exp(float64(v) - mx)
			}
			nll += mx + math.Log(s) - float64(row[tokens[c*n+j+1]])
			count++
		}
	}
	want := math.Exp(nll / float64(count))
	if res.Tokens != count || res.Chunks != 2 || math.Abs(res.Perplexity-want) > 1e-3*want {
		t.Errorf("perplexity %v over %d tokens (%d chunks); the definition gives %v over %d", res.Perplexity, res.Tokens, res.Chunks, want, count)
	}
	if res.KLDivergence > 1e-9 || res.Top1Agreement != 1 {
		t.Errorf("against itself: KL %v, top-1 %v", res.KLDivergence, res.Top1Agreement)
	}
	qm, qb := openCPU(t, "qwen2-tiny", "int8")
	q, err := runtime.Perplexity(context.Background(), qm, qb, tokens, runtime.PerplexityOptions{Context: n, BOS: -1, Reference: m, ReferenceBackend: b})
	if err != nil {
		t.Fatal(err)
	}
	if !(q.KLDivergence > 0 && q.KLDivergence < 0.05 && q.KLDivergenceP99 >= q.KLDivergence && q.Top1Agreement > 0.5) {
		t.Errorf("int8 against f16: %+v", q)
	}
	if _, err := runtime.Perplexity(context.Background(), m, b, tokens[:10], runtime.PerplexityOptions{Context: n, BOS: -1}); err == nil || !strings.Contains(err.Error(), "one chunk needs 64") {
		t.Errorf("a text shorter than a chunk: %v", err)
	}
}
