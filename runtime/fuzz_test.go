package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
)

// fuzzConfig is a model small enough that a bundle of it is written in a millisecond: the fuzzer
// rewrites its manifest on every input.
const fuzzConfig = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":16,"intermediate_size":32,
"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":320,
"max_position_embeddings":64,"rms_norm_eps":1e-06,"rope_theta":10000.0,"tie_word_embeddings":true}`

var fuzzBase = sync.OnceValues(func() (string, error) {
	files, err := testmodel.TokenizerFiles("gpt2") // compiles in a fraction of Qwen's time
	if err != nil {
		return "", err
	}
	return testmodel.BuildWith([]byte(fuzzConfig), 3, "fuzz-tiny", "f16", files)
})

// FuzzManifest feeds mutated manifests of a real bundle to the runtime: opening the model, the
// CPU backend, a state and one forward step must never panic and never allocate without bound,
// whatever sizes and offsets the manifest claims (the weights' bytes stay the bundle's).
func FuzzManifest(f *testing.F) {
	base, err := fuzzBase()
	if err != nil {
		f.Fatal(err)
	}
	b, err := format.Open(base)
	if err != nil {
		f.Fatal(err)
	}
	type section struct {
		s    format.Section
		data []byte
	}
	var secs []section
	for _, s := range b.Sections() {
		if s.Kind == format.KindTokenizer {
			continue // the runtime reads it lazily; leaving it out keeps each input small
		}
		data, err := b.Bytes(s)
		if err != nil {
			f.Fatal(err)
		}
		secs = append(secs, section{s, append([]byte(nil), data...)})
	}
	m := *b.Manifest()
	m.Tokenizer = nil
	seed, _ := json.Marshal(&m)
	b.Close()
	f.Add(seed)
	f.Add([]byte(strings.Replace(string(seed), `"num_hidden_layers":2`, `"num_hidden_layers":4096`, 1)))
	f.Add([]byte(strings.Replace(string(seed), `"max_position_embeddings":64`, `"max_position_embeddings":16777216`, 1)))
	f.Add([]byte(strings.Replace(string(seed), `"rows":320`, `"rows":1000000000`, 1)))
	for _, group := range []int{16, 8, 4, 1} {
		f.Add(q4Seed(f, seed, group))
	}
	dir := f.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// In memory: the writer's fsyncs cost nothing there, so the fuzzer runs hundreds of
		// inputs a second instead of a few.
		if d, err := os.MkdirTemp("/dev/shm", "anepack-fuzz-"); err == nil {
			dir = d
			f.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	f.Fuzz(func(t *testing.T, manifest []byte) {
		var m format.Manifest
		if json.Unmarshal(manifest, &m) != nil {
			return
		}
		m.FormatVersion = ""
		path := filepath.Join(dir, "m.aneb")
		w, err := format.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secs {
			if _, err := w.Add(s.s.Kind, s.s.Name, s.data); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(&m); err != nil {
			return // a manifest the writer refuses (names, sizes) never reaches a reader
		}
		defer os.Remove(path)
		var before goruntime.MemStats
		goruntime.ReadMemStats(&before)
		model, err := runtime.Open(path)
		if err != nil {
			return
		}
		defer model.Close()
		be, err := cpu.New(model, cpu.Options{Threads: 1, Batch: 4})
		if err != nil {
			return
		}
		defer be.Close()
		st, err := be.NewState(min(16, model.Config.MaxPositionEmbeddings))
		if err != nil {
			return
		}
		defer st.Close()
		logits := make([]float32, model.Config.VocabSize)
		_ = st.Forward([]int{1, 2}, 0, logits[:0])
		_ = st.Forward([]int{3}, 2, logits)
		var after goruntime.MemStats
		goruntime.ReadMemStats(&after)
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 256<<20 {
			t.Fatalf("a manifest made the runtime allocate %d MB", grew>>20)
		}
	})
}

// q4Seed rewrites the manifest seed so that every layer's linear weights claim to be q4 in groups
// of group inputs, over bytes the bundle has: the codes where the fp16 weights are, the scales and
// offsets at the start of the same section (both fit in an fp16 weight's bytes). The sizes all
// agree, so only the group size can be wrong; the kernels have 32, 64 and 128, and the fuzz
// model's rows are 16 and 32 inputs long, so every one of these must be refused when the bundle
// opens (16 and 8 used to pass and panic in the first product).
func q4Seed(f *testing.F, seed []byte, group int) []byte {
	var m format.Manifest
	if err := json.Unmarshal(seed, &m); err != nil {
		f.Fatal(err)
	}
	m.Model.DType, m.Model.GroupSize = "q4", group
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.DType != "f16" || len(t.Shape) != 2 || !strings.Contains(t.Name, "layers.") {
			continue
		}
		cols := t.Shape[1]
		if cols%group != 0 {
			f.Fatalf("group %d does not divide the %d columns of %s", group, cols, t.Name)
		}
		t.DType, t.GroupSize = "q4", group
		t.Scales, t.Offsets = nil, nil
		for j := range t.Parts {
			p := &t.Parts[j]
			side := format.TensorPart{Section: p.Section, Offset: p.Offset, Rows: p.Rows, Size: int64(p.Rows * cols / group * 2)}
			p.Size = int64(p.Rows * cols / 2)
			t.Scales, t.Offsets = append(t.Scales, side), append(t.Offsets, side)
		}
	}
	out, err := json.Marshal(&m)
	if err != nil {
		f.Fatal(err)
	}
	return out
}
