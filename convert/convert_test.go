package convert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/internal/sttest"
)

func bf16Bytes(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint16(b, half.F32ToBF16Scalar(v))
	}
	return b
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func goodTensors() []sttest.Tensor {
	return []sttest.Tensor{
		sttest.New("a.weight", "BF16", []int{2, 3}, bf16Bytes(1, -2.5, 3.140625, 0.0078125, 65536, 1e-8)),
		sttest.New("b.bias", "F32", []int{2}, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5)), math.Float32bits(-1))),
	}
}

func TestOpenSingleFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, SingleFile, sttest.Build(goodTensors()))
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := c.Tensor("a.weight")
	if a == nil || a.DType != dtype.BF16 || len(a.Shape) != 2 || a.Shape[1] != 3 || len(a.Data) != 12 {
		t.Fatalf("a.weight = %+v", a)
	}
	var buf bytes.Buffer
	var conv Converter
	if err := conv.WriteTensor(&buf, a, dtype.F16); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	want := []float32{1, -2.5, 3.140625, 0.0078125, float32(math.Inf(1)), 0}
	for i, w := range want {
		h := binary.LittleEndian.Uint16(got[2*i:])
		if f := half.F16ToF32Scalar(h); f != w && !(i == 5 && f < 1e-7) {
			t.Errorf("element %d = %v; want %v", i, f, w)
		}
	}
	if conv.Stats.Overflow != 1 {
		t.Errorf("overflow count %d; want 1 (65536 does not fit FP16)", conv.Stats.Overflow)
	}
	buf.Reset()
	if err := conv.WriteTensor(&buf, a, dtype.F32); err != nil {
		t.Fatal(err)
	}
	if f := math.Float32frombits(binary.LittleEndian.Uint32(buf.Bytes()[16:])); f != 65536 {
		t.Errorf("BF16->F32 of 65536 = %v", f)
	}
}

func TestShardedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	g := goodTensors()
	writeFile(t, dir, "model-00001-of-00002.safetensors", sttest.Build(g[:1]))
	writeFile(t, dir, "model-00002-of-00002.safetensors", sttest.Build(g[1:]))
	writeFile(t, dir, IndexFile, []byte(`{"metadata":{"total_size":20},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.bias":"model-00002-of-00002.safetensors"}}`))
	c, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Files) != 2 || c.Tensor("b.bias") == nil || c.Tensor("a.weight") == nil {
		t.Fatalf("files %v names %v", c.Files, c.Names())
	}
}

// TestBadCheckpoints covers the malformed inputs below; each must give a clear error
// naming the file (and the tensor or field where there is one).
func TestBadCheckpoints(t *testing.T) {
	good := sttest.Build(goodTensors())
	cases := []struct {
		name  string
		files map[string][]byte
		want  string // substring of the error
	}{
		{"truncated", map[string][]byte{SingleFile: good[:len(good)-3]}, "model.safetensors"},
		{"header longer than file", map[string][]byte{SingleFile: append(binary.LittleEndian.AppendUint64(nil, 1000), good[8:40]...)}, "larger than the"},
		{"absurd header length", map[string][]byte{SingleFile: append(binary.LittleEndian.AppendUint64(nil, 1<<62), good[8:]...)}, "absurd"},
		{"tiny file", map[string][]byte{SingleFile: {1, 2, 3}}, "8-byte header length"},
		{"unknown dtype", map[string][]byte{SingleFile: sttest.Build([]sttest.Tensor{sttest.New("x.weight", "F8_E4M3", []int{4}, make([]byte, 4))})}, `tensor x.weight: dtype "F8_E4M3" is not supported`},
		{"duplicate in header", map[string][]byte{SingleFile: sttest.Build([]sttest.Tensor{goodTensors()[0], goodTensors()[0]})}, "tensor a.weight: appears twice"},
		{"duplicate across shards", map[string][]byte{
			"s1.safetensors": good, "s2.safetensors": good,
			IndexFile: []byte(`{"weight_map":{"a.weight":"s1.safetensors","b.bias":"s2.safetensors"}}`)}, "a.weight"},
		{"shard outside directory", map[string][]byte{IndexFile: []byte(`{"weight_map":{"a.weight":"../x.safetensors"}}`)}, `shard "../x.safetensors"`},
		{"absolute shard", map[string][]byte{IndexFile: []byte(`{"weight_map":{"a.weight":"/etc/passwd"}}`)}, `shard "/etc/passwd"`},
		{"index without weight_map", map[string][]byte{IndexFile: []byte(`{"metadata":{}}`)}, "weight_map"},
		{"index names a missing tensor", map[string][]byte{
			"s1.safetensors": good,
			IndexFile:        []byte(`{"weight_map":{"a.weight":"s1.safetensors","b.bias":"s1.safetensors","c.weight":"s1.safetensors"}}`)}, "c.weight"},
		{"no weights", map[string][]byte{}, "no model.safetensors"},
		{"bad offsets", map[string][]byte{SingleFile: []byte(strings.Replace(string(good), `"data_offsets":[0,12]`, `"data_offsets":[0,14]`, 1))}, "model.safetensors"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				writeFile(t, dir, name, data)
			}
			c, err := OpenCheckpoint(dir)
			if err == nil {
				c.Close()
				t.Fatal("opened a bad checkpoint")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func tinyConfig(t *testing.T) *arch.Config {
	t.Helper()
	cfg, err := arch.ParseConfig([]byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":8,"intermediate_size":16,
		"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":10,
		"max_position_embeddings":64,"tie_word_embeddings":true}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkpointFor builds tensors matching cfg, letting mutate change them.
func checkpointFor(cfg *arch.Config, mutate func([]sttest.Tensor) []sttest.Tensor) []byte {
	fam, _ := arch.Lookup(cfg)
	var ts []sttest.Tensor
	for _, s := range fam.CheckpointTensors(cfg) {
		ts = append(ts, sttest.New(s.Name, "BF16", s.CheckpointShape(), make([]byte, 2*arch.Elements(s.Shape))))
	}
	if mutate != nil {
		ts = mutate(ts)
	}
	return sttest.Build(ts)
}

func TestCheckAgainstArchitecture(t *testing.T) {
	cfg := tinyConfig(t)
	open := func(data []byte) *Checkpoint {
		dir := t.TempDir()
		writeFile(t, dir, SingleFile, data)
		c, err := OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := open(checkpointFor(cfg, func(ts []sttest.Tensor) []sttest.Tensor {
		return append(ts, sttest.New("lm_head.weight", "BF16", []int{10, 8}, make([]byte, 160)))
	}))
	unused, err := c.Check(cfg)
	if err != nil || len(unused) != 1 || unused[0] != "lm_head.weight" {
		t.Fatalf("unused %v err %v; want lm_head.weight reported unused in a tied model", unused, err)
	}
	c = open(checkpointFor(cfg, func(ts []sttest.Tensor) []sttest.Tensor {
		for i := range ts {
			if strings.HasSuffix(ts[i].Name, "k_proj.weight") {
				ts[i].Shape = []int{8, 8}
				ts[i].Data = make([]byte, 128)
			}
		}
		return ts
	}))
	if _, err := c.Check(cfg); err == nil || !strings.Contains(err.Error(), "k_proj.weight: shape [8 8] does not match config.json; expected [4 8]") {
		t.Fatalf("shape mismatch error = %v", err)
	}
	c = open(checkpointFor(cfg, func(ts []sttest.Tensor) []sttest.Tensor { return ts[1:] }))
	if _, err := c.Check(cfg); err == nil || !strings.Contains(err.Error(), "model.embed_tokens.weight is missing") {
		t.Fatalf("missing tensor error = %v", err)
	}
}

// TestCheckExperts: a mixture of experts' checkpoint holds each expert's matrices apart; a
// missing one, or one whose shape disagrees with the config's expert sizes, is refused naming
// the tensor, the file and the config fields.
func TestCheckExperts(t *testing.T) {
	cfg, err := arch.ParseConfig([]byte(`{"architectures":["Qwen3MoeForCausalLM"],"hidden_size":8,"intermediate_size":16,
		"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":4,"vocab_size":10,
		"max_position_embeddings":64,"tie_word_embeddings":true,"num_experts":4,"num_experts_per_tok":2,
		"moe_intermediate_size":6,"mlp_only_layers":[0]}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	open := func(data []byte) *Checkpoint {
		dir := t.TempDir()
		writeFile(t, dir, SingleFile, data)
		c, err := OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	if unused, err := open(checkpointFor(cfg, nil)).Check(cfg); err != nil || len(unused) != 0 {
		t.Fatalf("a complete checkpoint: unused %v, %v", unused, err)
	}
	drop := func(name string) func([]sttest.Tensor) []sttest.Tensor {
		return func(ts []sttest.Tensor) []sttest.Tensor {
			var out []sttest.Tensor
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			if len(out) == len(ts) {
				t.Fatalf("test bug: no tensor %s", name)
			}
			return out
		}
	}
	// Layer 0 is dense (mlp_only_layers), layer 1 sparse.
	_, err = open(checkpointFor(cfg, drop("model.layers.1.mlp.experts.3.up_proj.weight"))).Check(cfg)
	if err == nil || !strings.Contains(err.Error(), "tensor model.layers.1.mlp.experts.3.up_proj.weight is missing; Qwen3MoeForCausalLM with this config.json needs it (shape [6 8])") {
		t.Errorf("missing expert: %v", err)
	}
	_, err = open(checkpointFor(cfg, drop("model.layers.0.mlp.down_proj.weight"))).Check(cfg)
	if err == nil || !strings.Contains(err.Error(), "model.layers.0.mlp.down_proj.weight is missing") {
		t.Errorf("missing dense MLP of an mlp_only layer: %v", err)
	}
	_, err = open(checkpointFor(cfg, func(ts []sttest.Tensor) []sttest.Tensor {
		for i := range ts {
			if ts[i].Name == "model.layers.1.mlp.experts.2.down_proj.weight" {
				ts[i].Shape, ts[i].Data = []int{8, 12}, make([]byte, 2*8*12)
			}
		}
		return ts
	})).Check(cfg)
	if err == nil || !strings.Contains(err.Error(), `model.layers.1.mlp.experts.2.down_proj.weight: shape [8 12] does not match config.json's moe_intermediate_size and hidden_size; expected [8 6]`) {
		t.Errorf("wrong expert shape: %v", err)
	}
	_, err = open(checkpointFor(cfg, func(ts []sttest.Tensor) []sttest.Tensor {
		for i := range ts {
			if ts[i].Name == "model.layers.1.mlp.gate.weight" {
				ts[i].Shape, ts[i].Data = []int{8, 8}, make([]byte, 2*8*8)
			}
		}
		return ts
	})).Check(cfg)
	if err == nil || !strings.Contains(err.Error(), `model.layers.1.mlp.gate.weight: shape [8 8] does not match config.json's num_experts and hidden_size; expected [4 8]`) {
		t.Errorf("wrong router shape: %v", err)
	}
}

func TestFormatErrorsWrap(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, SingleFile, []byte{1, 2, 3})
	_, err := OpenCheckpoint(dir)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("err %v does not wrap ErrFormat", err)
	}
}

// FuzzSafetensorsHeader feeds arbitrary bytes to the header parser: it must return an error or
// tensors whose data lie inside the input, never panic.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(sttest.Build(goodTensors()))
	f.Add(sttest.Build([]sttest.Tensor{sttest.New("x", "F8_E4M3", []int{4}, make([]byte, 4))}))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<40))
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, err := parseFile("x.safetensors", data)
		if err != nil {
			return
		}
		for _, r := range refs {
			if r.DType.Size() == 0 || len(r.Data)%r.DType.Size() != 0 {
				t.Fatalf("tensor %s: %d bytes of %s", r.Name, len(r.Data), r.DType)
			}
		}
	})
}

// TestWriteTensorTransposed writes a [2, 3] BF16 tensor (a Conv1D weight [in, out]) as its
// [3, 2] transpose in F32 and F16.
func TestWriteTensorTransposed(t *testing.T) {
	r := &TensorRef{Name: "w", DType: dtype.BF16, Shape: []int{2, 3}, Data: bf16Bytes(1, 2, 3, 4, 5, 6)}
	var c Converter
	var buf bytes.Buffer
	if err := c.WriteTensorTransposed(&buf, r, dtype.F32); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 4, 2, 5, 3, 6}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(buf.Bytes()[4*i:])); got != w {
			t.Errorf("element %d = %v; want %v", i, got, w)
		}
	}
	buf.Reset()
	if err := c.WriteTensorTransposed(&buf, r, dtype.F16); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got := half.F16ToF32Scalar(binary.LittleEndian.Uint16(buf.Bytes()[2*i:])); got != w {
			t.Errorf("f16 element %d = %v; want %v", i, got, w)
		}
	}
	if err := c.WriteTensorTransposed(&buf, &TensorRef{Name: "v", DType: dtype.F32, Shape: []int{4}, Data: make([]byte, 16)}, dtype.F32); err == nil {
		t.Error("transposed a 1-D tensor")
	}
}

// TestNamedPipeCheckpoint: a FIFO named model.safetensors is refused at once instead of blocking
// in open.
func TestNamedPipeCheckpoint(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, SingleFile), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenCheckpoint(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("error %v; want one saying it is not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO checkpoint blocked")
	}
}
