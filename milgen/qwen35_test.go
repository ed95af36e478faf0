package milgen

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
)

// qwen35Config is the Qwen3.5 golden model's config: three Gated DeltaNet layers, then one
// gated attention layer.
const qwen35Config = `{"architectures":["Qwen3_5ForCausalLM"],"hidden_size":64,"intermediate_size":160,
"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":151936,
"max_position_embeddings":32768,"tie_word_embeddings":true,"linear_conv_kernel_dim":4,"linear_num_key_heads":2,
"linear_num_value_heads":4,"linear_key_head_dim":16,"linear_value_head_dim":16,
"rope_parameters":{"rope_type":"default","rope_theta":10000000.0,"partial_rotary_factor":0.25},
"layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]}`

// TestQwen35Programs: each layer gets the programs of its own token mixer (linear_attn_in and
// linear_attn_out on the DeltaNet layers, attn_qkv with the output gates and attn_o on the
// attention layer) and the MLP's; linear_attn_in concatenates in_proj_qkv, in_proj_z,
// in_proj_b and in_proj_a; a group the layer does not run is refused.
func TestQwen35Programs(t *testing.T) {
	cfg := parseConfig(t, qwen35Config)
	opts := Options{Seqs: []int{64}}
	specs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range progs {
		if k.Seq == 64 && k.Kind != arch.GroupLMHead {
			names = append(names, k.Name)
		}
	}
	want := "layers.0.linear_attn_in.s64 layers.0.linear_attn_out.s64 layers.0.mlp.s64 " +
		"layers.1.linear_attn_in.s64 layers.1.linear_attn_out.s64 layers.1.mlp.s64 " +
		"layers.2.linear_attn_in.s64 layers.2.linear_attn_out.s64 layers.2.mlp.s64 " +
		"layers.3.attn_qkv.s64 layers.3.attn_o.s64 layers.3.mlp.s64"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("programs\n got %s\nwant %s", got, want)
	}
	in := findProgram(t, progs, "layers.1.linear_attn_in.s64")
	if in.Inputs[0].Shape[1] != 64 || in.Outputs[0].Shape[1] != 128+64+4+4 {
		t.Errorf("linear_attn_in maps %v to %v", in.Inputs[0].Shape, in.Outputs[0].Shape)
	}
	for _, v := range []string{"w_linear_qkv", "w_linear_z", "w_linear_b", "w_linear_a", "concat"} {
		if !strings.Contains(in.Text, v) {
			t.Errorf("linear_attn_in's program lacks %s", v)
		}
	}
	qkv := findProgram(t, progs, "layers.3.attn_qkv.s64")
	if qkv.Outputs[0].Shape[1] != 2*128+2*64 {
		t.Errorf("gated attn_qkv gives %d channels; want q_proj's 256 (queries and gates) + k 64 + v 64", qkv.Outputs[0].Shape[1])
	}
	recs, err := blobplan.GroupRecords(cfg, arch.GroupLinearIn, 2, dtype.F16)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Tensors[0] != "model.layers.2.linear_attn.in_proj_qkv.weight" || recs[3].Shape[0] != 4 {
		t.Errorf("linear_attn_in records %+v", recs)
	}
	if _, err := blobplan.GroupRecords(cfg, arch.GroupQKV, 0, dtype.F16); err == nil || !strings.Contains(err.Error(), "layer 0 of Qwen3_5ForCausalLM has linear_attn_in, linear_attn_out, mlp") {
		t.Errorf("attn_qkv of a DeltaNet layer: %v", err)
	}
}
