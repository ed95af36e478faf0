package pack

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/internal/sttest"
	"github.com/anepack/anepack/synth"
)

// goldenCheckpoint writes a SYNTH-1 checkpoint of testdata/model-<name>.json's config.
func goldenCheckpoint(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "model-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Seed   uint64          `json:"seed"`
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	tok, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := synth.WriteCheckpoint(context.Background(), dir, g.Config, tok, synth.Options{Seed: g.Seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGPT2Checkpoints packs GPT-2 as current saves write it ("transformer." prefix) and as the
// Hub's openai-community/gpt2 file has it (no prefix, plus the attn.bias / attn.masked_bias
// buffers of old checkpoints): the bundles' sections are identical, the buffers are skipped
// without a warning, and the Conv1D weights are stored transposed and say so.
func TestGPT2Checkpoints(t *testing.T) {
	dir := goldenCheckpoint(t, "gpt2-tiny")
	_, current := packTo(t, dir, Options{Name: "gpt2-tiny"})

	old := filepath.Join(t.TempDir(), "gpt2-old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ts []sttest.Tensor
	for _, n := range ckpt.Names() {
		r := ckpt.Tensor(n)
		ts = append(ts, sttest.New(strings.TrimPrefix(n, "transformer."), r.RawDType, r.Shape, r.Data))
	}
	for _, l := range []string{"0", "1"} {
		ts = append(ts, sttest.New("h."+l+".attn.bias", "BOOL", []int{1, 1, 4, 4}, make([]byte, 16)),
			sttest.New("h."+l+".attn.masked_bias", "F32", []int{}, make([]byte, 4)))
	}
	data := sttest.Build(ts) // copies the tensors out of the mapping
	ckpt.Close()
	if err := os.WriteFile(filepath.Join(old, convert.SingleFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ConfigFile, TokenizerFile, TokenizerConfigFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(old, f), b, 0o644)
	}
	_, hub := packTo(t, old, Options{Name: "gpt2-tiny", Warn: func(m string) {
		if strings.Contains(m, "ignoring") {
			t.Errorf("warning %q; the attn.bias buffers must be skipped silently", m)
		}
	}})
	a, b := current.Sections(), hub.Sections()
	if len(a) != len(b) {
		t.Fatalf("%d sections vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || (a[i].SHA256 != b[i].SHA256 && !strings.HasPrefix(a[i].Name, FilePrefix)) {
			t.Errorf("section %s differs from %s", a[i].Name, b[i].Name)
		}
	}
	v := current.Manifest().FindTensor("transformer.h.1.attn.c_attn.weight")
	if v == nil || !v.Transposed || v.Shape[0] != 192 || v.Shape[1] != 64 {
		t.Errorf("c_attn view %+v; want [192 64], transposed", v)
	}
	if w := current.Manifest().FindTensor("transformer.wpe.weight"); w == nil || w.Parts[0].Section != TensorsSection || w.DType != "f16" {
		t.Errorf("wpe view %+v; want f16 in the tensors section", w)
	}
}

// TestQNormWrongLength packs a Qwen3 checkpoint whose q_norm has 16 values where head_dim is
// 32: the error names the file, the tensor and what config.json implies, and nothing is written.
func TestQNormWrongLength(t *testing.T) {
	dir := goldenCheckpoint(t, "qwen3-tiny")
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ts []sttest.Tensor
	for _, n := range ckpt.Names() {
		r := ckpt.Tensor(n)
		if n == "model.layers.1.self_attn.q_norm.weight" {
			ts = append(ts, sttest.New(n, "BF16", []int{16}, r.Data[:32]))
			continue
		}
		ts = append(ts, sttest.New(n, r.RawDType, r.Shape, r.Data))
	}
	data := sttest.Build(ts)
	ckpt.Close()
	if err := os.WriteFile(filepath.Join(dir, convert.SingleFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "q.aneb")
	_, err = Pack(context.Background(), dir, Options{Output: out})
	for _, want := range []string{filepath.Join(dir, convert.SingleFile), "model.layers.1.self_attn.q_norm.weight", "shape [16]", "head_dim", "[32]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a bundle was written")
	}
}

// TestQuantizedViews packs int8 and int4 bundles: every linear weight and the tied embedding
// (the LM head) are quantized, with scales (and offsets) beside their codes; norms stay f32;
// the manifest records the scheme and the group size; the records are what package blobplan laid
// out, so the ANE programs name the very bytes the CPU reads.
func TestQuantizedViews(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	for _, tc := range []struct {
		dtype, scheme string
		group         int
	}{{"int8", "q8", 0}, {"int4", "q4", 32}} {
		_, b := packTo(t, dir, Options{DType: tc.dtype, GroupSize: tc.group})
		m := b.Manifest()
		if m.Model.DType != tc.scheme || m.Model.GroupSize != tc.group {
			t.Errorf("%s: model dtype %q group %d", tc.dtype, m.Model.DType, m.Model.GroupSize)
		}
		q := m.FindTensor("model.layers.1.mlp.down_proj.weight")
		if q == nil || q.DType != tc.scheme || len(q.Scales) != 1 || (tc.scheme == "q4") != (len(q.Offsets) == 1) || q.GroupSize != tc.group {
			t.Errorf("%s: down_proj view %+v", tc.dtype, q)
		}
		if e := m.FindTensor("model.embed_tokens.weight"); e == nil || e.DType != "q8" || len(e.Scales) != len(e.Parts) {
			t.Errorf("%s: the tied embedding is the LM head and stays q8: %+v", tc.dtype, e)
		}
		if n := m.FindTensor("model.norm.weight"); n == nil || n.DType != "f32" {
			t.Errorf("%s: norm %+v", tc.dtype, n)
		}
		if len(m.Programs) == 0 || !strings.Contains(programText(t, b, "layers.0.mlp.s32"), map[string]string{"q8": "constexpr_affine_dequantize", "q4": "constexpr_blockwise_shift_scale"}[tc.scheme]) {
			t.Errorf("%s: the MLP program does not read the weights through the constexpr op", tc.dtype)
		}
	}
}

// programText returns the MIL text of the bundle's program called name.
func programText(t *testing.T, b *format.Bundle, name string) string {
	t.Helper()
	for _, k := range b.Manifest().Programs {
		if k.Name == name {
			s, _ := b.Section(k.MIL)
			text, err := b.Bytes(s)
			if err != nil {
				t.Fatal(err)
			}
			return string(text[k.MILOffset : k.MILOffset+k.MILSize])
		}
	}
	t.Fatalf("no program %s", name)
	return ""
}

// TestQuantizedBadOptions: a group size that does not divide a layer's input, one for a
// non-int4 dtype, and an unknown dtype are refused before anything is written.
func TestQuantizedBadOptions(t *testing.T) {
	dir := goldenCheckpoint(t, "gemma3-tiny") // hidden 64, intermediate 160: 128 divides neither
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{DType: "int4", GroupSize: 128}, "group size 128 does not divide its 64 inputs"},
		{Options{DType: "int4", GroupSize: 48}, "group size 48; expected 32, 64 or 128"},
		{Options{DType: "int8", GroupSize: 64}, "group size 64 applies to int4 weights"},
		{Options{DType: "int3"}, `dtype "int3" is not supported; expected f16, f32, int8 or int4`},
	} {
		out := filepath.Join(t.TempDir(), "q.aneb")
		tc.opts.Output = out
		_, err := Pack(context.Background(), dir, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error mentioning %q", tc.opts, err, tc.want)
		}
		if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 0 {
			t.Errorf("%+v: left %d files behind", tc.opts, len(ents))
		}
	}
}

// TestForeignQuantizedCheckpoint: a checkpoint already quantized in a scheme anepack does not
// read (GPTQ/AWQ qweight, bitsandbytes SCB, compressed-tensors weight_packed) is refused with
// an error naming the file, the tensor and the scheme, and nothing is written.
func TestForeignQuantizedCheckpoint(t *testing.T) {
	for _, tc := range []struct{ suffix, scheme string }{
		{".qweight", "GPTQ/AWQ"},
		{".SCB", "bitsandbytes int8"},
		{".weight_packed", "compressed-tensors"},
	} {
		t.Run(tc.suffix, func(t *testing.T) {
			dir := goldenCheckpoint(t, "qwen3-tiny")
			ckpt, err := convert.OpenCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			var ts []sttest.Tensor
			for _, n := range ckpt.Names() {
				r := ckpt.Tensor(n)
				ts = append(ts, sttest.New(n, r.RawDType, r.Shape, r.Data))
			}
			name := "model.layers.0.self_attn.q_proj" + tc.suffix
			ts = append(ts, sttest.New(name, "I32", []int{2}, make([]byte, 8)))
			data := sttest.Build(ts) // before Close: the tensors' bytes are the checkpoint's mapping
			ckpt.Close()
			if err := os.WriteFile(filepath.Join(dir, convert.SingleFile), data, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "q.aneb")
			_, err = Pack(context.Background(), dir, Options{Output: out, DType: "int8"})
			for _, want := range []string{filepath.Join(dir, convert.SingleFile), name, tc.scheme, "does not read"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not mention %q", err, want)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a bundle was written")
			}
		})
	}
}
