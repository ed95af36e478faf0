package pack

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/internal/sttest"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
)

// hubQwen35 rewrites the SYNTH-1 Qwen3.5 checkpoint at dir the way the Hub ships Qwen3.5: the
// class Qwen3_5ForConditionalGeneration with the language model's config under text_config and
// its tensors under model.language_model., A_log and the DeltaNet output norms in F32 (the
// same values), and a vision tower and a multi-token-prediction head beside them.
func hubQwen35(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "qwen3.5-hub")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var text map[string]any
	if err := json.Unmarshal(raw, &text); err != nil {
		t.Fatal(err)
	}
	delete(text, "architectures")
	cfg, _ := json.Marshal(map[string]any{"architectures": []string{"Qwen3_5ForConditionalGeneration"}, "model_type": "qwen3_5",
		"tie_word_embeddings": true, "image_token_id": 151655, "vision_config": map[string]any{"depth": 1, "hidden_size": 8}, "text_config": text})
	if err := os.WriteFile(filepath.Join(out, ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{TokenizerFile, TokenizerConfigFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, f), b, 0o644)
	}
	ckpt, err := convert.OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	var ts []sttest.Tensor
	for _, n := range ckpt.Names() {
		r := ckpt.Tensor(n)
		name := "model.language_model." + strings.TrimPrefix(n, "model.")
		if strings.HasSuffix(n, ".A_log") || strings.HasSuffix(n, "linear_attn.norm.weight") {
			f32 := make([]byte, 0, 2*len(r.Data))
			for i := 0; i+1 < len(r.Data); i += 2 { // BF16 -> F32 is exact: the high half of the bits
				f32 = binary.LittleEndian.AppendUint32(f32, uint32(binary.LittleEndian.Uint16(r.Data[i:]))<<16)
			}
			ts = append(ts, sttest.New(name, "F32", r.Shape, f32))
			continue
		}
		ts = append(ts, sttest.New(name, r.RawDType, r.Shape, append([]byte(nil), r.Data...)))
	}
	ts = append(ts,
		sttest.New("model.visual.blocks.0.attn.qkv.weight", "BF16", []int{24, 8}, make([]byte, 24*8*2)),
		sttest.New("model.visual.merger.linear_fc1.bias", "F32", []int{8}, make([]byte, 32)),
		sttest.New("mtp.fc.weight", "BF16", []int{64, 128}, make([]byte, 64*128*2)),
		sttest.New("mtp.layers.0.input_layernorm.weight", "BF16", []int{64}, make([]byte, 128)))
	if err := os.WriteFile(filepath.Join(out, convert.SingleFile), sttest.Build(ts), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQwen35Checkpoints packs the Qwen3.5 golden model as Qwen3_5ForCausalLM and as the Hub's
// Qwen3_5ForConditionalGeneration (mixed BF16/F32, vision and MTP tensors): the vision and MTP
// tensors are skipped without a warning, A_log, dt_bias, conv1d and the norms are stored F32,
// every section but the source files is the same in both bundles, and both give the same logits.
func TestQwen35Checkpoints(t *testing.T) {
	dir := goldenCheckpoint(t, "qwen3.5-tiny")
	resText, text := packTo(t, dir, Options{Name: "qwen3.5-tiny"})
	checkViews(t, dir, text, dtype.F16)
	hub := hubQwen35(t, dir)
	resHub, vl := packTo(t, hub, Options{Name: "qwen3.5-tiny", Warn: func(m string) {
		if strings.Contains(m, "ignoring") {
			t.Errorf("warning %q; the vision tower and the MTP head must be skipped silently", m)
		}
	}})
	checkViews(t, hub, vl, dtype.F16)
	if a := vl.Manifest().Model.Architecture; a != "Qwen3_5ForConditionalGeneration" {
		t.Errorf("architecture %q", a)
	}
	a, b := text.Sections(), vl.Sections()
	if len(a) != len(b) {
		t.Fatalf("%d sections vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || (a[i].SHA256 != b[i].SHA256 && !strings.HasPrefix(a[i].Name, FilePrefix)) {
			t.Errorf("section %s differs from %s", a[i].Name, b[i].Name)
		}
	}
	var logits [2][]float32
	for i, path := range []string{resText.Path, resHub.Path} {
		m, err := runtime.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		be, err := cpu.New(m, cpu.Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		st, err := be.NewState(16)
		if err != nil {
			t.Fatal(err)
		}
		logits[i] = make([]float32, m.Config.VocabSize)
		if err := st.Forward([]int{9707, 11, 1879, 0}, 0, logits[i]); err != nil {
			t.Fatal(err)
		}
		st.Close()
		be.Close()
		m.Close()
	}
	for i := range logits[0] {
		if logits[0][i] != logits[1][i] {
			t.Fatalf("logit %d: %v from the text checkpoint, %v from the Hub's", i, logits[0][i], logits[1][i])
		}
	}
}

// TestQwen35BadCheckpoints: a checkpoint without a layer's A_log, or with conv1d.weight in the
// wrong shape, is refused naming the file, the tensor and what was expected.
func TestQwen35BadCheckpoints(t *testing.T) {
	dir := goldenCheckpoint(t, "qwen3.5-tiny")
	for _, tc := range []struct {
		name string
		edit func(n string, r *convert.TensorRef) (sttest.Tensor, bool)
		want []string
	}{
		{"missing A_log", func(n string, r *convert.TensorRef) (sttest.Tensor, bool) {
			return sttest.Tensor{}, n != "model.layers.1.linear_attn.A_log"
		}, []string{"model.layers.1.linear_attn.A_log is missing", "Qwen3_5ForCausalLM", "[4]"}},
		{"conv1d without its middle dimension", func(n string, r *convert.TensorRef) (sttest.Tensor, bool) {
			if n == "model.layers.2.linear_attn.conv1d.weight" {
				return sttest.New(n, r.RawDType, []int{128, 4}, r.Data), true
			}
			return sttest.Tensor{}, true
		}, []string{convert.SingleFile, "model.layers.2.linear_attn.conv1d.weight", "shape [128 4]", "[128 1 4]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad")
			os.MkdirAll(bad, 0o755)
			for _, f := range []string{ConfigFile, TokenizerFile, TokenizerConfigFile} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				os.WriteFile(filepath.Join(bad, f), b, 0o644)
			}
			ckpt, err := convert.OpenCheckpoint(dir)
			if err != nil {
				t.Fatal(err)
			}
			var ts []sttest.Tensor
			for _, n := range ckpt.Names() {
				r := ckpt.Tensor(n)
				repl, keep := tc.edit(n, r)
				switch {
				case !keep:
				case repl.Name != "":
					ts = append(ts, sttest.New(repl.Name, repl.DType, repl.Shape, append([]byte(nil), repl.Data...)))
				default:
					ts = append(ts, sttest.New(n, r.RawDType, r.Shape, append([]byte(nil), r.Data...)))
				}
			}
			ckpt.Close()
			os.WriteFile(filepath.Join(bad, convert.SingleFile), sttest.Build(ts), 0o644)
			out := filepath.Join(t.TempDir(), "x.aneb")
			_, err = Pack(t.Context(), bad, Options{Output: out})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not mention %q", err, w)
				}
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Error("a bundle was written")
			}
		})
	}
}
