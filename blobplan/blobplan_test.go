package blobplan

import (
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
)

// smallConfigJSON is a Qwen2 config: hidden 96, 4 heads of 16 (Cq = 64), 2 KV heads
// (Ckv = 32), intermediate 160, vocab 200.
const smallConfigJSON = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 96, "intermediate_size": 160,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 200,
 "max_position_embeddings": 128, "tie_word_embeddings": true}`

func parseConfig(t testing.TB, js string) *arch.Config {
	t.Helper()
	cfg, err := arch.ParseConfig([]byte(js), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestGroupRecords checks the record layout pack must write.
func TestGroupRecords(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	recs, err := GroupRecords(cfg, arch.GroupQKV, 1, dtype.F32)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name  string
		shape []int
		dt    dtype.DType
		n     int
	}{
		{"q", []int{64, 96, 1, 1}, dtype.F32, 1},
		{"k", []int{32, 96, 1, 1}, dtype.F32, 1},
		{"v", []int{32, 96, 1, 1}, dtype.F32, 1},
		{"qkv_bias", []int{1, 128, 1, 1}, dtype.F16, 3},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records; want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := recs[i]
		if r.Name != w.name || !slices.Equal(r.Shape, w.shape) || r.DType != w.dt || len(r.Tensors) != w.n {
			t.Errorf("record %d = %+v; want %s %v %s", i, r, w.name, w.shape, w.dt)
		}
	}
	if recs[3].Tensors[1] != "model.layers.1.self_attn.k_proj.bias" || recs[0].Tensors[0] != "model.layers.1.self_attn.q_proj.weight" {
		t.Errorf("tensor names %v %v", recs[0].Tensors, recs[3].Tensors)
	}
	if recs[3].Size() != 256 || recs[0].Size() != 64*96*4 {
		t.Errorf("sizes %d %d", recs[3].Size(), recs[0].Size())
	}
	mlp, _ := GroupRecords(cfg, arch.GroupMLP, 0, dtype.F16)
	if len(mlp) != 3 || mlp[2].Name != "down" || !slices.Equal(mlp[2].Shape, []int{96, 160, 1, 1}) {
		t.Errorf("mlp records %+v", mlp)
	}
	if _, err := GroupRecords(cfg, "attn", 0, dtype.F16); err == nil {
		t.Error("unknown group accepted")
	}
	if _, err := GroupRecords(cfg, arch.GroupO, 2, dtype.F16); err == nil {
		t.Error("layer 2 of 2 accepted")
	}
	if _, err := GroupRecords(cfg, arch.GroupO, 0, dtype.I8); err == nil {
		t.Error("int8 weights accepted")
	}
}

func TestLMHeadChunks(t *testing.T) {
	for _, c := range []struct {
		vocab, max int
		want       [][2]int
	}{
		{151936, 0, [][2]int{{0, 30400}, {30400, 60800}, {60800, 91200}, {91200, 121600}, {121600, 151936}}},
		{151936, 65536, [][2]int{{0, 50688}, {50688, 101376}, {101376, 151936}}},
		{200, 128, [][2]int{{0, 128}, {128, 200}}},
		{32000, 0, [][2]int{{0, 32000}}},
		{65536, 65536, [][2]int{{0, 65536}}},
		{65537, 65536, [][2]int{{0, 32832}, {32832, 65537}}},
		{100, 30, [][2]int{{0, 25}, {25, 50}, {50, 75}, {75, 100}}},
	} {
		got, err := LMHeadChunks(c.vocab, c.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Errorf("LMHeadChunks(%d, %d) = %v; want %v", c.vocab, c.max, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("LMHeadChunks(%d, %d) = %v; want %v", c.vocab, c.max, got, c.want)
			}
		}
	}
	for _, bad := range [][2]int{{0, 10}, {100, 65537}, {100, -1}} {
		if _, err := LMHeadChunks(bad[0], bad[1]); err == nil {
			t.Errorf("LMHeadChunks(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

// TestOptionsRefused checks the options out of range.
func TestOptionsRefused(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	for _, o := range []Options{{WeightDType: dtype.BF16}, {GroupSize: 48}, {MaxLMHeadRows: 70000}, {MaxLMHeadRows: 32}} {
		if _, err := Blobs(cfg, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	blobs, err := Blobs(cfg, Options{MaxLMHeadRows: 128})
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 2*3+2 || blobs[0].Key.String() != "layers.0.attn_qkv" || blobs[7].Key.String() != "lm_head.1" {
		t.Errorf("%d blobs, first %s, last %s", len(blobs), blobs[0].Key, blobs[len(blobs)-1].Key)
	}
}

// TestExpertRecords: a sparse layer's experts are one blob of two stacked records, each the
// rows of every expert's checkpoint matrices in turn, viewed as the bundle's stacked tensor;
// a dense layer (mlp_only_layers) keeps the mlp blob.
func TestExpertRecords(t *testing.T) {
	cfg := parseConfig(t, `{"architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,"intermediate_size":160,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":1000,
		"max_position_embeddings":64,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":64,"mlp_only_layers":[0]}`)
	recs, err := GroupRecords(cfg, arch.GroupExperts, 1, dtype.Q8)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records; want gate_up and down, each data and scale", len(recs))
	}
	gu, down := recs[0], recs[2]
	if gu.View != "model.layers.1.mlp.experts.gate_up_proj" || len(gu.Tensors) != 16 || gu.Tensors[1] != "model.layers.1.mlp.experts.0.up_proj.weight" ||
		gu.Tensors[2] != "model.layers.1.mlp.experts.1.gate_proj.weight" || !slices.Equal(gu.Shape, []int{8 * 128, 64, 1, 1}) || gu.Part != PartData {
		t.Errorf("gate_up record %+v", gu)
	}
	if recs[1].Part != PartScale || !slices.Equal(recs[1].Shape, []int{8 * 128}) {
		t.Errorf("gate_up scale record %+v", recs[1])
	}
	if down.View != "model.layers.1.mlp.experts.down_proj" || len(down.Tensors) != 8 || !slices.Equal(down.Shape, []int{8 * 64, 64, 1, 1}) {
		t.Errorf("down record %+v", down)
	}
	if _, err := GroupRecords(cfg, arch.GroupExperts, 0, dtype.F16); err == nil || !strings.Contains(err.Error(), "layer 0 of Qwen3MoeForCausalLM has attn_qkv, attn_o, mlp") {
		t.Errorf("experts of a dense layer: %v", err)
	}
	blobs, err := Blobs(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, b := range blobs {
		keys = append(keys, b.Key.String())
	}
	if got := strings.Join(keys, " "); !strings.HasPrefix(got, "layers.0.attn_qkv layers.0.attn_o layers.0.mlp layers.1.attn_qkv layers.1.attn_o layers.1.experts lm_head.0") {
		t.Errorf("blobs %s", got)
	}
}

// TestMXFP4HasNoBlob: an mxfp4 weight is refused rather than planned as a q4-like blob (its
// E8M0 scales have no MIL op), naming the weight.
func TestMXFP4HasNoBlob(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	_, err := GroupRecords(cfg, arch.GroupQKV, 0, dtype.MXFP4)
	if err == nil || !strings.Contains(err.Error(), "mxfp4") || !strings.Contains(err.Error(), "q_proj") {
		t.Fatalf("GroupRecords with mxfp4: %v", err)
	}
}
