package runtime_test

import (
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
)

// bombConfig is a model of a few MB whose KV cache is huge: one KV head of head_dim 16384 caches
// 128 KiB a token in each of its 16 layers, 8 GiB at the default context of 4096 tokens, and its
// context reaches 2^23 tokens (16 TiB). (A bundle of this kind, 204 MB, killed anerun at start.)
const bombConfig = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":2,"intermediate_size":2,
"num_hidden_layers":16,"num_attention_heads":1,"num_key_value_heads":1,"head_dim":16384,
"vocab_size":151936,"max_position_embeddings":8388608,"rms_norm_eps":1e-06,"rope_theta":10000.0,
"tie_word_embeddings":true}`

var bombBundle = sync.OnceValues(func() (string, error) { return testmodel.Build([]byte(bombConfig), 5, "kv-bomb", "f16") })

// TestStateMemoryBomb asks for the whole context of that model: the state must be refused
// before anything is allocated, with the sizes and the context that fits, where it used to die
// with "fatal error: runtime: out of memory".
func TestStateMemoryBomb(t *testing.T) {
	path, err := bombBundle()
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := cpu.New(m, cpu.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for _, cache := range []string{"f32", "f16"} {
		ct, _ := runtime.ParseCacheType(cache)
		b, err := cpu.New(m, cpu.Options{Threads: 1, Cache: ct})
		if err != nil {
			t.Fatal(err)
		}
		s, err := runtime.NewSession(m, b, 1<<23)
		if err == nil {
			s.Close()
			t.Fatalf("%s: a session of 2^23 tokens (%d TiB of cache) was allocated", cache, 4*ct.ValueBytes())
		}
		for _, want := range []string{"a context of 8388608 tokens needs", " TiB for its KV cache (16 attention layers of 1 KV heads × head_dim 16384, keys and values in " + cache + ")", "lower --ctx to"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", cache, err, want)
			}
		}
		if strings.Contains(err.Error(), "--cache-type f16") != (cache == "f32") {
			t.Errorf("%s: error %q: the advice to halve the cache is for an f32 cache only", cache, err)
		}
		b.Close()
	}
	goruntime.ReadMemStats(&after)
	if after.TotalAlloc-before.TotalAlloc > 64<<20 {
		t.Errorf("refusing the sessions allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
	}
	// What the error says fits does fit.
	s, err := runtime.NewSession(m, b, 64)
	if err != nil {
		t.Fatalf("a context of 64 tokens: %v", err)
	}
	s.Close()
}
