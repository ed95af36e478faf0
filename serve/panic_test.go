package serve

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// panicBackend is the test backend whose batched passes panic while fail is set: what a kernel
// does on arguments it refuses, on the engine's goroutine that every request shares.
type panicBackend struct {
	*cpu.Backend
	fail *atomic.Bool
}

func (b panicBackend) NewBatch(rows, seqs int) (runtime.Batch, error) {
	bt, err := b.Backend.NewBatch(rows, seqs)
	return panicBatch{bt, b.fail}, err
}

type panicBatch struct {
	runtime.Batch
	fail *atomic.Bool
}

func (b panicBatch) Forward(steps []runtime.BatchStep) error {
	if b.fail.Load() {
		panic("kernels.MatMulQ4Float: group 16: want 32, 64 or 128 dividing cols = 64")
	}
	return b.Batch.Forward(steps)
}

// TestEnginePanicFailsOneRequest makes the engine's pass panic: the request in it must get a
// 500 naming the panic (a stream: an error event), and the server must go on serving. The
// panic used to kill the server (and here, the test binary).
func TestEnginePanicFailsOneRequest(t *testing.T) {
	var fail atomic.Bool
	ts := startServer(t, Config{Model: testModel, Backend: panicBackend{testBackend, &fail}})
	req := func(stream bool) map[string]any {
		return map[string]any{"model": ts.ModelID(), "max_tokens": 4, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "Hello"}}}
	}
	fail.Store(true)
	resp, data := ts.do(t, http.MethodPost, "/v1/chat/completions", req(false))
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(data), "group 16: want 32, 64 or 128") {
		t.Fatalf("a panicking pass: status %d, %s; want 500 naming the panic", resp.StatusCode, data)
	}
	resp, data = ts.do(t, http.MethodPost, "/v1/chat/completions", req(true))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"error"`) || !strings.Contains(string(data), "group 16") {
		t.Fatalf("a panicking pass in a stream: status %d, %s; want an error event naming the panic", resp.StatusCode, data)
	}
	fail.Store(false)
	var c chatCompletion
	ts.post(t, "/v1/chat/completions", req(false), &c)
	if len(c.Choices) != 1 || c.Usage.CompletionTokens == 0 {
		t.Fatalf("after the panics: %+v", c)
	}
	if resp, _ := ts.do(t, http.MethodGet, "/health", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/health after the panics: %d", resp.StatusCode)
	}
}
