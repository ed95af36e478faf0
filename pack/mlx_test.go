package pack

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/internal/sttest"
	"github.com/anepack/anepack/quant"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// mlxCheckpoint rewrites a SYNTH-1 checkpoint the way mlx-lm saves a 4-bit model: every linear
// weight and the embedding as uint32 codes [rows, cols/8] with fp16 scales and biases
// [rows, cols/group] (w = scale·q + bias), norms and biases as they were, and the quantization
// in config.json. It returns the q4 codes and scales it wrote, by weight name.
func mlxCheckpoint(t *testing.T, dir string, group int) map[string][2][]byte {
	t.Helper()
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cfgMap map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	json.Unmarshal(raw, &cfgMap)
	cfg, err := arch.ParseConfig(raw, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	fam, _ := arch.Lookup(cfg)
	quantized := map[string]bool{}
	for _, tt := range fam.Tensors(cfg) {
		if tt.Role == arch.RoleLinear || tt.Role == arch.RoleEmbedding || tt.Role == arch.RoleLMHead {
			quantized[tt.Name] = true
		}
	}
	want := map[string][2][]byte{}
	var ts []sttest.Tensor
	for _, n := range ckpt.Names() {
		r := ckpt.Tensor(n)
		if !quantized[n] {
			ts = append(ts, sttest.New(n, r.RawDType, r.Shape, r.Data))
			continue
		}
		rows, cols := r.Shape[0], r.Shape[1]
		w := make([]float32, rows*cols)
		if err := quant.Widen(w, r.Data, r.DType); err != nil {
			t.Fatal(err)
		}
		g := cols / group
		data, scale, offset := make([]byte, rows*cols/2), make([]uint16, rows*g), make([]uint16, rows*g)
		if err := quant.QuantizeQ4(data, scale, offset, w, rows, cols, group); err != nil {
			t.Fatal(err)
		}
		var sb, bb []byte
		for i := range scale {
			s := half.F16ToF32Scalar(scale[i])
			sb = binary.LittleEndian.AppendUint16(sb, scale[i])
			bb = binary.LittleEndian.AppendUint16(bb, half.F32ToF16Scalar(-s*half.F16ToF32Scalar(offset[i])))
		}
		base := strings.TrimSuffix(n, ".weight")
		ts = append(ts, sttest.New(n, "U32", []int{rows, cols / 8}, data),
			sttest.New(base+".scales", "F16", []int{rows, g}, sb), sttest.New(base+".biases", "F16", []int{rows, g}, bb))
		want[n] = [2][]byte{data, sb}
	}
	out := sttest.Build(ts)
	ckpt.Close()
	if err := os.WriteFile(filepath.Join(dir, convert.SingleFile), out, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgMap["quantization"] = map[string]any{"group_size": group, "bits": 4}
	raw, _ = json.Marshal(cfgMap)
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestPackMLX4 packs an MLX 4-bit checkpoint: it becomes an int4 bundle in the checkpoint's group
// size whose codes and scales are the checkpoint's bytes (no requantization), with the LM head
// (the tied embedding) kept at 4 bits; asking for another dtype or group size is refused.
func TestPackMLX4(t *testing.T) {
	dir := synthCheckpoint(t, "qwen2-tiny", 1)
	want := mlxCheckpoint(t, dir, 32)
	res, b := packTo(t, dir, Options{})
	m := b.Manifest()
	if m.Model.DType != "q4" || m.Model.GroupSize != 32 {
		t.Fatalf("model dtype %s group %d; want q4 in groups of 32", m.Model.DType, m.Model.GroupSize)
	}
	for _, name := range []string{"model.layers.1.mlp.down_proj.weight", "model.embed_tokens.weight"} {
		v := m.FindTensor(name)
		if v == nil || v.DType != dtype.Q4.String() || v.GroupSize != 32 {
			t.Fatalf("%s: view %+v", name, v)
		}
		var codes, scales []byte
		for i := range v.Parts {
			codes = append(codes, viewPart(t, b, v.Parts[i])...)
			scales = append(scales, viewPart(t, b, v.Scales[i])...)
		}
		if !bytes.Equal(codes, want[name][0]) || !bytes.Equal(scales, want[name][1]) {
			t.Errorf("%s: the bundle's codes or scales are not the checkpoint's bytes", name)
		}
	}
	// It runs, and predicts what the unquantized model predicts, within 4-bit error.
	f16, _ := packTo(t, synthCheckpoint(t, "qwen2-tiny", 1), Options{})
	ids := []int{9707, 11, 1879, 0, 358, 1079, 264, 8720}
	got, ref := forwardLogits(t, res.Path, ids), forwardLogits(t, f16.Path, ids)
	worst, mean := 0.0, 0.0
	for i := range ref {
		d := math.Abs(float64(got[i] - ref[i]))
		worst, mean = max(worst, d), mean+d/float64(len(ref))
	}
	// An int4 bundle with a q8 head, from the same weights, differs by at most 0.84 and 0.13 on
	// average; this one keeps the head at 4 bits too.
	t.Logf("logit difference from the f16 bundle: largest %.3f, mean %.4f", worst, mean)
	if !(worst < 2 && mean < 0.3) {
		t.Errorf("logit difference from the f16 bundle: largest %.3f, mean %.4f; expected 4-bit error", worst, mean)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{DType: "int8"}, "packs as --dtype int4"},
		{Options{GroupSize: 64}, "--group-size 64 would need requantizing"},
	} {
		tc.opts.Output = filepath.Join(t.TempDir(), "x.aneb")
		if _, err := packErr(dir, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want an error mentioning %q", tc.opts, err, tc.want)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	os.WriteFile(filepath.Join(dir, ConfigFile), bytes.Replace(raw, []byte(`"bits":4`), []byte(`"bits":8`), 1), 0o644)
	if _, err := packErr(dir, Options{Output: filepath.Join(t.TempDir(), "y.aneb")}); err == nil || !strings.Contains(err.Error(), "bits is 8") {
		t.Errorf("an 8-bit MLX checkpoint: %v", err)
	}
}

// viewPart returns the bytes of one part of a tensor view.
func viewPart(t *testing.T, b *format.Bundle, p format.TensorPart) []byte {
	t.Helper()
	sec, ok := b.Section(p.Section)
	if !ok {
		t.Fatalf("section %s missing", p.Section)
	}
	data, err := b.Bytes(sec)
	if err != nil {
		t.Fatal(err)
	}
	return data[p.Offset : p.Offset+p.Size]
}

// packErr packs and returns only the error (the bundle, if any, is not opened).
func packErr(dir string, opts Options) (*Result, error) {
	return Pack(context.Background(), dir, opts)
}

// forwardLogits runs ids through the bundle at path on the CPU and returns the last logits.
func forwardLogits(t *testing.T, path string, ids []int) []float32 {
	t.Helper()
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	be, err := cpu.New(m, cpu.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	st, err := be.NewState(len(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logits := make([]float32, m.Config.VocabSize)
	if err := st.Forward(ids, 0, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}
