package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/sttest"
)

// mxfp4Config is a Qwen2 whose down_proj ([32, 64]) is two blocks of 32 inputs a row.
const mxfp4Config = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":32,"intermediate_size":64,
	"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":10,
	"max_position_embeddings":64,"tie_word_embeddings":true}`

// asMXFP4 replaces the float tensor name by its MXFP4 blocks and scales (codes and scales
// counting up, scales from 120), letting edit change them.
func asMXFP4(name string, edit func(blocks, scales *sttest.Tensor)) func([]sttest.Tensor) []sttest.Tensor {
	return func(ts []sttest.Tensor) []sttest.Tensor {
		var out []sttest.Tensor
		for _, x := range ts {
			if x.Name != name {
				out = append(out, x)
				continue
			}
			rows, cols := x.Shape[0], x.Shape[1]
			codes, scales := make([]byte, rows*cols/2), make([]byte, rows*cols/32)
			for i := range codes {
				codes[i] = byte(i)
			}
			for i := range scales {
				scales[i] = byte(120 + i%16)
			}
			base := strings.TrimSuffix(name, ".weight")
			b := sttest.New(base+"_blocks", "U8", []int{rows, cols / 32, 16}, codes)
			s := sttest.New(base+"_scales", "U8", []int{rows, cols / 32}, scales)
			if edit != nil {
				edit(&b, &s)
			}
			out = append(out, b, s)
		}
		return out
	}
}

// TestCheckMXFP4: a weight stored as X_blocks and X_scales (U8) is accepted in place of the
// float X.weight and read without a copy; scales of the wrong length, the wrong dtype and the
// NaN scale are refused naming the file, the tensor and what was expected.
func TestCheckMXFP4(t *testing.T) {
	cfg, err := arch.ParseConfig([]byte(mxfp4Config), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	const down = "model.layers.0.mlp.down_proj.weight"
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
	c := open(checkpointFor(cfg, asMXFP4(down, nil)))
	if unused, err := c.Check(cfg); err != nil || len(unused) != 0 {
		t.Fatalf("an MXFP4 down_proj: unused %v, %v", unused, err)
	}
	q := c.MXFP4(down)
	if q == nil || len(q.Codes()) != 32*64/2 || len(q.ScaleBytes()) != 32*2 || q.Codes()[5] != 5 || q.ScaleBytes()[17] != 121 {
		t.Fatalf("MXFP4(%s) = %+v", down, q)
	}
	if c.MXFP4("model.layers.0.mlp.up_proj.weight") != nil {
		t.Error("a float weight reported as MXFP4")
	}
	for _, tc := range []struct {
		name string
		edit func(b, s *sttest.Tensor)
		want []string
	}{
		{"scales of the wrong length", func(b, s *sttest.Tensor) { s.Shape, s.Data = []int{32, 1}, s.Data[:32] },
			[]string{SingleFile, "tensor model.layers.0.mlp.down_proj_scales", "shape [32 1] (32 elements)", "expects [32 2] (64 scales: one per block of 32 inputs, 2 in each of 32 rows)"}},
		{"blocks of the wrong shape", func(b, s *sttest.Tensor) { b.Shape = []int{32, 1, 32} },
			[]string{"down_proj_blocks", "expects [32 2 16] (1024 bytes"}},
		{"float scales", func(b, s *sttest.Tensor) { s.DType, s.Data = "BF16", append(s.Data, s.Data...) },
			[]string{"down_proj_scales", "dtype BF16; expected U8"}},
		{"NaN scale", func(b, s *sttest.Tensor) { s.Data = bytes.Clone(s.Data); s.Data[7] = 255 },
			[]string{"down_proj_scales", "row 3, block 1 is 255, the NaN code of E8M0"}},
	} {
		_, err := open(checkpointFor(cfg, asMXFP4(down, tc.edit))).Check(cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

// TestCheckMXFP4Experts: a stacked expert weight [experts, out, in] (gpt-oss's
// mlp.experts.gate_up_proj) is stored as blocks [experts, out, in/32, 16] and scales [experts,
// out, in/32].
func TestCheckMXFP4Experts(t *testing.T) {
	const name = "model.layers.0.mlp.experts.gate_up_proj"
	spec := arch.Tensor{Name: name, Shape: []int{4, 6, 64}, Role: arch.RoleExperts, Layer: 0}
	build := func(scaleShape []int) *Checkpoint {
		n := arch.Elements(scaleShape)
		data := sttest.Build([]sttest.Tensor{
			sttest.New(name+"_blocks", "U8", []int{4, 6, 2, 16}, make([]byte, 4*6*64/2)),
			sttest.New(name+"_scales", "U8", scaleShape, bytes.Repeat([]byte{127}, n)),
		})
		dir := t.TempDir()
		writeFile(t, dir, SingleFile, data)
		c, err := OpenCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	if names, ok, err := build([]int{4, 6, 2}).checkMXFP4(spec); !ok || err != nil || len(names) != 2 {
		t.Fatalf("stacked experts: %v %v %v", names, ok, err)
	}
	_, _, err := build([]int{4, 6, 1}).checkMXFP4(spec)
	if err == nil || !strings.Contains(err.Error(), "gate_up_proj_scales: shape [4 6 1] (24 elements)") ||
		!strings.Contains(err.Error(), "expects [4 6 2] (48 scales: one per block of 32 inputs, 2 in each of 24 rows)") {
		t.Errorf("short scales: %v", err)
	}
}
