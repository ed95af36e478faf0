package runtime_test

import (
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestOpenIsZeroCopy opens a real bundle and checks that the weights are views of the mapping:
// the heap grows by far less than the weights' size, and a tensor's bytes are the section's.
func TestOpenIsZeroCopy(t *testing.T) {
	path := testmodel.Bundle(t, "qwen2-tiny-untied", "f32") // ~120 MB of f32 weights
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("opening the model grew the heap by %d bytes; the weights must stay in the mapping", grew)
	}
	emb, err := m.Tensor("model.embed_tokens.weight")
	if err != nil {
		t.Fatal(err)
	}
	part := m.Manifest().FindTensor("model.embed_tokens.weight").Parts[0]
	sec, _ := m.Bundle().Section(part.Section)
	data, err := m.Bundle().Bytes(sec)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(emb.Parts[0].Data) != &data[part.Offset] {
		t.Error("the embedding's bytes are not the bundle section's bytes")
	}
	if emb.DType != dtype.F16 {
		t.Fatalf("the untied embedding of an f32 bundle is %q; embeddings are always f16", emb.DType)
	}
	if got := len(emb.Parts[0].F16()); got != emb.Parts[0].Rows*m.Config.HiddenSize {
		t.Errorf("embedding part 0 has %d fp16 values; want %d rows of %d", got, emb.Parts[0].Rows, m.Config.HiddenSize)
	}
	head, err := m.Tensor("lm_head.weight")
	if err != nil {
		t.Fatal(err)
	}
	if head.DType != dtype.F32 || len(head.Parts[0].F32()) != head.Parts[0].Rows*m.Config.HiddenSize {
		t.Errorf("the lm_head of an f32 bundle is %q with %d values in part 0", head.DType, len(head.Parts[0].F32()))
	}
}

// TestOpenRejectsBadBundles rewrites a real bundle's manifest in ways pack never would and
// checks each gives an error naming the problem.
func TestOpenRejectsBadBundles(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "f16")
	q0 := "model.layers.0.self_attn.q_proj.weight"
	for _, tc := range []struct {
		name string
		edit func(m *format.Manifest)
		want []string
	}{
		{"unsupported architecture", func(m *format.Manifest) { m.Model.Architecture = "MambaForCausalLM" },
			[]string{"MambaForCausalLM", "not supported", "Qwen2ForCausalLM", "LlamaForCausalLM"}},
		{"missing tensor", func(m *format.Manifest) {
			for i := range m.Tensors {
				if m.Tensors[i].Name == q0 {
					m.Tensors = append(m.Tensors[:i], m.Tensors[i+1:]...)
					break
				}
			}
		}, []string{q0, "no tensor"}},
		{"wrong shape", func(m *format.Manifest) { m.FindTensor(q0).Shape = []int{3, 64} }, []string{q0, "shape"}},
		{"wrong dtype", func(m *format.Manifest) { m.FindTensor(q0).DType = "q9" }, []string{q0, "dtype", "q9"}},
		{"wrong size", func(m *format.Manifest) { m.FindTensor(q0).DType = "f32" }, []string{q0, "8192 bytes; expected 16384 for 64 rows"}},
		{"q8 without scales", func(m *format.Manifest) { m.FindTensor(q0).DType = "q8" }, []string{q0, "0 scale and 0 offset parts for 1 parts of a q8 tensor"}},
		{"q4 without a group size", func(m *format.Manifest) { m.FindTensor(q0).DType = "q4" }, []string{q0, "group_size 0; expected 32, 64 or 128 dividing its 64 columns"}},
		{"f16 norm", func(m *format.Manifest) { m.FindTensor("model.norm.weight").DType = "f16" }, []string{"model.norm.weight", "dtype"}},
		{"out of bounds", func(m *format.Manifest) { m.FindTensor(q0).Parts[0].Offset = 1 << 40 }, []string{q0, "outside section"}},
		{"missing section", func(m *format.Manifest) { m.FindTensor(q0).Parts[0].Section = "blob/nope" }, []string{q0, "blob/nope"}},
		{"bad config", func(m *format.Manifest) {
			m.Model.Config = []byte(strings.Replace(string(m.Model.Config), `"num_key_value_heads":2`, `"num_key_value_heads":3`, 1))
		}, []string{"num_key_value_heads"}},
		{"bad dtype", func(m *format.Manifest) { m.Model.DType = "q5_k" }, []string{"model.dtype", "q5_k", "a newer anepack"}},
		{"2^40 layers", func(m *format.Manifest) {
			m.Model.Config = []byte(strings.Replace(string(m.Model.Config), `"num_hidden_layers":2`, `"num_hidden_layers":1099511627776`, 1))
		}, []string{"model.config.num_hidden_layers", "1099511627776 is outside [1, 4096]"}},
		{"huge context", func(m *format.Manifest) {
			m.Model.Config = []byte(strings.Replace(string(m.Model.Config), `"max_position_embeddings":32768`, `"max_position_embeddings":1099511627776`, 1))
		}, []string{"model.config.max_position_embeddings"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "bad.aneb")
			if err := testmodel.Rewrite(src, dst, tc.edit); err != nil {
				t.Fatal(err)
			}
			m, err := runtime.Open(dst)
			if err == nil {
				m.Close()
				t.Fatal("opened without error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), dst) {
				t.Errorf("error %q does not name the bundle %s", err, dst)
			}
		})
	}
}

// TestOpenRejectsBadQuantized damages the side data of an int4 bundle: scales of the wrong size,
// a missing offset part, scales outside their section.
func TestOpenRejectsBadQuantized(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "int4")
	q0 := "model.layers.0.self_attn.q_proj.weight"
	for _, tc := range []struct {
		name string
		edit func(m *format.Manifest)
		want string
	}{
		{"scale size", func(m *format.Manifest) { m.FindTensor(q0).Scales[0].Size-- }, "scales: 255 bytes; expected 256"},
		{"no offsets", func(m *format.Manifest) { m.FindTensor(q0).Offsets = nil }, "1 scale and 0 offset parts"},
		{"scales outside", func(m *format.Manifest) { m.FindTensor(q0).Scales[0].Offset = 1 << 40 }, "scales: bytes"},
		{"offset rows", func(m *format.Manifest) { m.FindTensor(q0).Offsets[0].Rows = 3 }, "offsets: 3 rows; the part has 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "bad.aneb")
			if err := testmodel.Rewrite(src, dst, tc.edit); err != nil {
				t.Fatal(err)
			}
			m, err := runtime.Open(dst)
			if err == nil {
				m.Close()
				t.Fatal("opened without error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), q0) {
				t.Errorf("error %q does not mention %q and the tensor", err, tc.want)
			}
		})
	}
}

// TestOpenRejectsQ4Group opens q4 bundles whose group size divides every row but is not one
// the kernels have (32, 64 or 128), with scales and offsets of matching sizes: the first product
// used to panic, on a server's engine goroutine, so the group is checked when the bundle opens.
func TestOpenRejectsQ4Group(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "int4")
	for _, group := range []int{16, 8, 2} {
		dst := filepath.Join(t.TempDir(), "regrouped.aneb")
		if err := testmodel.Regroup(src, dst, group); err != nil {
			t.Fatal(err)
		}
		m, err := runtime.Open(dst)
		if err == nil {
			m.Close()
			t.Fatalf("group %d: opened without error", group)
		}
		for _, want := range []string{dst, "group_size", strconv.Itoa(group), "expected 32, 64 or 128"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("group %d: error %q does not mention %q", group, err, want)
			}
		}
	}
}

// TestOpenMXFP4 views a weight as mxfp4: its codes are 4 bits a weight like int4's, its scales
// one E8M0 byte per row and block of 32 inputs, and no offsets. An int4 bundle's q_proj (64 x
// 64, so 128 scale bytes) relabelled that way opens with those views; scale parts of another
// size, or offsets, are refused naming the tensor and the size expected.
func TestOpenMXFP4(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "int4")
	q0 := "model.layers.0.self_attn.q_proj.weight"
	relabel := func(m *format.Manifest) {
		w := m.FindTensor(q0)
		w.DType, w.GroupSize, w.Offsets = "mxfp4", 0, nil
		w.Scales[0].Size = 128
	}
	dst := filepath.Join(t.TempDir(), "mxfp4.aneb")
	if err := testmodel.Rewrite(src, dst, relabel); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Tensor(q0)
	if err != nil {
		t.Fatal(err)
	}
	if w.DType != dtype.MXFP4 || w.Group != 32 || len(w.Parts) != 1 || len(w.Parts[0].Data) != 64*64/2 ||
		len(w.Parts[0].Scale) != 64*64/32 || w.Parts[0].Offset != nil {
		t.Errorf("view: %v group %d, %d parts, %d code and %d scale bytes", w.DType, w.Group, len(w.Parts), len(w.Parts[0].Data), len(w.Parts[0].Scale))
	}
	m.Close()
	for _, tc := range []struct {
		name string
		edit func(m *format.Manifest)
		want string
	}{
		{"fp16-sized scales", func(m *format.Manifest) { relabel(m); m.FindTensor(q0).Scales[0].Size = 256 }, "scales: 256 bytes; expected 128 for 64 rows"},
		{"offsets", func(m *format.Manifest) {
			offsets := m.FindTensor(q0).Offsets
			relabel(m)
			m.FindTensor(q0).Offsets = offsets
		}, "1 scale and 1 offset parts for 1 parts of a mxfp4 tensor"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.aneb")
		if err := testmodel.Rewrite(src, bad, tc.edit); err != nil {
			t.Fatal(err)
		}
		m, err := runtime.Open(bad)
		if err == nil {
			m.Close()
			t.Fatalf("%s: opened without error", tc.name)
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), q0) {
			t.Errorf("%s: error %q does not mention %q and the tensor", tc.name, err, tc.want)
		}
	}
}
