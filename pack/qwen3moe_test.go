package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/internal/sttest"
	"github.com/anepack/anepack/quant"
	"github.com/anepack/anepack/synth"
)

// TestQwen3MoEPack packs the Qwen3-MoE golden model: each layer's experts are stacked into
// mlp.experts.gate_up_proj [E, 2I, H] (expert e's gate_proj rows, then its up_proj rows) and
// mlp.experts.down_proj [E, H, I] in one blob, the router stays F32 in the tensors section, and
// no ANE program reads the experts. Quantized, each expert's rows are its own matrix quantized
// alone, the scales after every expert's codes.
func TestQwen3MoEPack(t *testing.T) {
	dir := goldenCheckpoint(t, "qwen3moe-tiny")
	_, b := packTo(t, dir, Options{Name: "qwen3moe-tiny"})
	checkViews(t, dir, b, dtype.F16)
	m := b.Manifest()
	for _, k := range m.Programs {
		if k.Kind == arch.GroupExperts {
			t.Errorf("program %s reads the experts", k.Name)
		}
	}
	gu := m.FindTensor("model.layers.1.mlp.experts.gate_up_proj")
	if gu == nil || len(gu.Parts) != 1 || gu.Parts[0].Section != "blob/layers.1.experts" || gu.Parts[0].Rows != 8*96 {
		t.Fatalf("gate_up view %+v", gu)
	}
	if r := m.FindTensor("model.layers.0.mlp.gate.weight"); r == nil || r.DType != "f32" || r.Parts[0].Section != TensorsSection {
		t.Errorf("router view %+v", r)
	}

	// The golden's experts are 48 wide, which int4's groups of 32 do not divide
	// (TestQwen3MoEBadInputs); int4 packs a held-out shape of 64-wide experts.
	wide := moeCheckpoint(t, map[string]any{"moe_intermediate_size": 64})
	for _, dt := range []string{"int8", "int4"} {
		dir := dir
		rows, cols := 64, 48 // expert 5's down_proj
		if dt == "int4" {
			dir, cols = wide, 64
		}
		ckpt, err := convert.OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer ckpt.Close()
		_, qb := packTo(t, dir, Options{Name: "qwen3moe-tiny", DType: dt})
		v := qb.Manifest().FindTensor("model.layers.1.mlp.experts.down_proj")
		if v == nil || len(v.Parts) != 1 || len(v.Scales) != 1 || v.Parts[0].Rows != 8*64 {
			t.Fatalf("%s down_proj view %+v", dt, v)
		}
		codes, scales := partBytes(t, qb, v.Parts[0]), partBytes(t, qb, v.Scales[0])
		// Expert 5's down_proj, quantized alone.
		ref := ckpt.Tensor("model.layers.1.mlp.experts.5.down_proj.weight")
		data, scale := make([]byte, rows*cols), make([]byte, 2*rows)
		var wantCodes, wantScales []byte
		if dt == "int8" {
			if err := quant.QuantizeQ8From(unsafe.Slice((*int8)(unsafe.Pointer(&data[0])), len(data)), u16s(scale), ref.Data, ref.DType, rows, cols); err != nil {
				t.Fatal(err)
			}
			wantCodes, wantScales = data, scale
			codes, scales = codes[5*rows*cols:6*rows*cols], scales[5*2*rows:6*2*rows]
		} else {
			g := rows * cols / 32
			data, scale, offset := make([]byte, rows*cols/2), make([]byte, 2*g), make([]byte, 2*g)
			if err := quant.QuantizeQ4From(data, u16s(scale), u16s(offset), ref.Data, ref.DType, rows, cols, 32); err != nil {
				t.Fatal(err)
			}
			wantCodes, wantScales = data, scale
			codes, scales = codes[5*rows*cols/2:6*rows*cols/2], scales[5*2*g:6*2*g]
			if got := partBytes(t, qb, v.Offsets[0])[5*2*g : 6*2*g]; !bytes.Equal(got, offset) {
				t.Errorf("int4: expert 5's offsets differ from its matrix quantized alone")
			}
		}
		if !bytes.Equal(codes, wantCodes) || !bytes.Equal(scales, wantScales) {
			t.Errorf("%s: expert 5's codes or scales differ from its matrix quantized alone", dt)
		}
		if r := qb.Manifest().FindTensor("model.layers.0.mlp.gate.weight"); r == nil || r.DType != "f32" {
			t.Errorf("%s: router view %+v; the router is never quantized", dt, r)
		}
	}
}

// moeCheckpoint writes a SYNTH-1 checkpoint of the Qwen3-MoE golden's config with the fields
// of edit replaced (a held-out shape) and seed 7.
func moeCheckpoint(t *testing.T, edit map[string]any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "model-qwen3moe-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	for k, v := range edit {
		g.Config[k] = v
	}
	cfg, err := json.Marshal(g.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "qwen3moe-variant")
	if err := synth.WriteCheckpoint(context.Background(), dir, cfg, tok, synth.Options{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// partBytes returns the bytes of one part of a view.
func partBytes(t *testing.T, b *format.Bundle, p format.TensorPart) []byte {
	t.Helper()
	s, ok := b.Section(p.Section)
	if !ok {
		t.Fatalf("section %s missing", p.Section)
	}
	data, err := b.Bytes(s)
	if err != nil {
		t.Fatal(err)
	}
	return data[p.Offset : p.Offset+p.Size]
}

// TestQwen3MoEBadInputs: a config or checkpoint whose experts cannot be packed is refused
// before anything is written, naming the file and the field or tensor and what was expected.
func TestQwen3MoEBadInputs(t *testing.T) {
	dir := goldenCheckpoint(t, "qwen3moe-tiny")
	copyDir := func(t *testing.T, mutate func(d string)) string {
		d := filepath.Join(t.TempDir(), "ckpt")
		os.MkdirAll(d, 0o755)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			os.WriteFile(filepath.Join(d, e.Name()), b, 0o644)
		}
		mutate(d)
		return d
	}
	editConfig := func(f func(map[string]any)) func(string) {
		return func(d string) {
			var m map[string]any
			b, _ := os.ReadFile(filepath.Join(d, ConfigFile))
			json.Unmarshal(b, &m)
			f(m)
			b, _ = json.Marshal(m)
			os.WriteFile(filepath.Join(d, ConfigFile), b, 0o644)
		}
	}
	editTensors := func(f func([]sttest.Tensor) []sttest.Tensor) func(string) {
		return func(d string) {
			ckpt, err := convert.OpenCheckpoint(d)
			if err != nil {
				t.Fatal(err)
			}
			var ts []sttest.Tensor
			for _, n := range ckpt.Names() {
				r := ckpt.Tensor(n)
				ts = append(ts, sttest.New(n, r.RawDType, r.Shape, append([]byte(nil), r.Data...)))
			}
			ckpt.Close()
			if err := os.WriteFile(filepath.Join(d, convert.SingleFile), sttest.Build(f(ts)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name, dir string
		want      []string
	}{
		{"more experts per token than experts", copyDir(t, editConfig(func(m map[string]any) { m["num_experts_per_tok"] = 9 })),
			[]string{"config.json", `field "num_experts_per_tok": 9 exceeds num_experts (8)`}},
		{"mlp_only_layers out of range", copyDir(t, editConfig(func(m map[string]any) { m["mlp_only_layers"] = []int{0, 2} })),
			[]string{"config.json", `field "mlp_only_layers": names layer 2; the model has layers 0 to 1`}},
		{"missing expert", copyDir(t, editTensors(func(ts []sttest.Tensor) []sttest.Tensor {
			var out []sttest.Tensor
			for _, x := range ts {
				if x.Name != "model.layers.0.mlp.experts.6.gate_proj.weight" {
					out = append(out, x)
				}
			}
			return out
		})), []string{"tensor model.layers.0.mlp.experts.6.gate_proj.weight is missing", "shape [48 64]"}},
		{"expert shape disagrees", copyDir(t, editConfig(func(m map[string]any) { m["moe_intermediate_size"] = 32 })),
			[]string{"model.safetensors", "mlp.experts.0.gate_proj.weight: shape [48 64] does not match config.json's moe_intermediate_size and hidden_size; expected [32 64]"}},
		{"int4 groups across an expert's rows", dir, []string{"model.layers.0.mlp.experts.down_proj", "group size 32 does not divide its 48 inputs"}},
		{"dense MLP missing from an mlp_only layer", copyDir(t, editConfig(func(m map[string]any) { m["mlp_only_layers"] = []int{1} })),
			[]string{"tensor model.layers.1.mlp.gate_proj.weight is missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "x.aneb")
			opts := Options{Output: out}
			if strings.HasPrefix(tc.name, "int4") {
				opts.DType = "int4"
			}
			_, err := Pack(context.Background(), tc.dir, opts)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v; want it to mention %q", err, w)
				}
			}
			if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
				t.Errorf("%d file(s) written despite the error", len(ents))
			}
		})
	}
}

// TestWriteQuantizedStacks: the record of a stacked weight is every source's codes in turn,
// then their scales (and offsets), each source quantized as a weight of its own.
func TestWriteQuantizedStacks(t *testing.T) {
	b := &builder{ctx: context.Background(), ckpt: &convert.Checkpoint{}}
	refs := []*convert.TensorRef{bf16Weight(70, 64, 1), bf16Weight(3, 64, 2), bf16Weight(130, 64, 3)}
	for _, tc := range []struct {
		dt    dtype.DType
		group int
	}{{dtype.Q8, 0}, {dtype.Q4, 32}} {
		var got bytes.Buffer
		q, err := b.writeQuantized(&got, refs, false, tc.dt, tc.group)
		if err != nil {
			t.Fatal(err)
		}
		var data, scale, offset []byte
		for _, ref := range refs {
			one := &builder{}
			p, err := one.quantize(ref, false, tc.dt, tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.writeData(func(b []byte) error { data = append(data, b...); return nil }); err != nil {
				t.Fatal(err)
			}
			scale, offset = append(scale, p.scale...), append(offset, p.offset...)
		}
		if !bytes.Equal(got.Bytes(), data) || !bytes.Equal(q.part(blobplan.PartScale), scale) || !bytes.Equal(q.part(blobplan.PartOffset), offset) {
			t.Errorf("%v: the stacked record differs from its sources quantized one by one", tc.dt)
		}
	}
}
