package arch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// qwen3MoETiny returns the config of testdata/model-qwen3moe-tiny.json (as transformers 5
// writes it: num_local_experts) and its tensor_shape list, what Hugging Face saved.
func qwen3MoETiny(t *testing.T) (string, map[string][]int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "model-qwen3moe-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Config json.RawMessage  `json:"config"`
		Shapes map[string][]int `json:"tensor_shape"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return string(g.Config), g.Shapes
}

// TestParseQwen3MoETiny: the golden's config parses with transformers 5's spelling of the
// expert count, every layer is sparse, and the checkpoint's tensors are exactly the ones
// Hugging Face saved (per-expert matrices), while the bundle's stack them per layer.
func TestParseQwen3MoETiny(t *testing.T) {
	cfg, saved := qwen3MoETiny(t)
	c, fam := parse(t, cfg)
	if c.NumExperts != 8 || c.NumExpertsPerTok != 2 || c.MoEIntermediateSize != 48 || !c.NormTopKProb || c.DecoderSparseStep != 1 ||
		len(c.MLPOnlyLayers) != 0 || !c.SparseLayer(0) || !c.SparseLayer(1) || c.SparseLayer(2) || c.IntermediateSize != 160 {
		t.Errorf("config %+v", c)
	}
	ck := fam.CheckpointTensors(c)
	if len(ck) != len(saved) {
		t.Errorf("%d checkpoint tensors; Hugging Face saved %d", len(ck), len(saved))
	}
	for _, tt := range ck {
		if want, ok := saved[tt.Name]; !ok || !equalInts(tt.Shape, want) {
			t.Errorf("checkpoint tensor %s %v; saved: %v (%v)", tt.Name, tt.Shape, want, ok)
		}
	}
	ts := fam.Tensors(c)
	// embed, final norm; per layer input norm, q, k, v, q_norm, k_norm, o, MLP norm, router, gate_up, down.
	if len(ts) != 2+2*11 || fam.TensorCount(c) != len(ts) {
		t.Fatalf("%d bundle tensors (count %d)", len(ts), fam.TensorCount(c))
	}
	want := map[string]struct {
		shape   []int
		role    Role
		group   string
		sources int
	}{
		"model.layers.0.mlp.gate.weight":          {[]int{8, 64}, RoleRouter, "", 0},
		"model.layers.1.mlp.experts.gate_up_proj": {[]int{8, 96, 64}, RoleExperts, GroupExperts, 16},
		"model.layers.1.mlp.experts.down_proj":    {[]int{8, 64, 48}, RoleExperts, GroupExperts, 8},
	}
	for _, tt := range ts {
		if strings.Contains(tt.Name, "mlp.gate_proj") {
			t.Errorf("%s in a sparse layer", tt.Name)
		}
		w, ok := want[tt.Name]
		if !ok {
			continue
		}
		delete(want, tt.Name)
		if !equalInts(tt.Shape, w.shape) || tt.Role != w.role || tt.Group != w.group || len(tt.Sources) != w.sources {
			t.Errorf("%s: %+v", tt.Name, tt)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing %v", want)
	}
	gu := fam.Tensor(c, ExpertGateUp, 1)
	if rows, cols := gu.Matrix(); rows != 8*96 || cols != 64 {
		t.Errorf("gate_up as a matrix: %dx%d", rows, cols)
	}
	if s := gu.Sources; s[0].Name != "model.layers.1.mlp.experts.0.gate_proj.weight" || s[1].Name != "model.layers.1.mlp.experts.0.up_proj.weight" ||
		s[15].Name != "model.layers.1.mlp.experts.7.up_proj.weight" || !equalInts(s[15].Shape, []int{48, 64}) || s[15].Role != RoleLinear {
		t.Errorf("gate_up's sources %v, ..., %v", s[0], s[15])
	}
	var names []string
	for _, g := range fam.Groups(c) {
		names = append(names, g.Name)
	}
	if strings.Join(names, " ") != "attn_qkv attn_o experts" {
		t.Errorf("groups %v; every layer is sparse", names)
	}
}

// TestQwen3MoEDenseLayers: mlp_only_layers and decoder_sparse_step make some layers dense; those
// have the MLP group and its tensors, the others the experts.
func TestQwen3MoEDenseLayers(t *testing.T) {
	cfg, _ := qwen3MoETiny(t)
	cfg = strings.Replace(cfg, `"num_hidden_layers": 2`, `"num_hidden_layers": 6`, 1)
	cfg = strings.Replace(cfg, `"decoder_sparse_step": 1`, `"decoder_sparse_step": 2`, 1)
	cfg = strings.Replace(cfg, `"mlp_only_layers": []`, `"mlp_only_layers": [5, 1, 5]`, 1)
	c, fam := parse(t, cfg)
	if !equalInts(c.MLPOnlyLayers, []int{1, 5}) {
		t.Errorf("mlp_only_layers %v; want [1 5]", c.MLPOnlyLayers)
	}
	// Sparse: (l+1) % 2 == 0 and not listed: layer 3 only.
	for l := range 6 {
		if got := c.SparseLayer(l); got != (l == 3) {
			t.Errorf("layer %d sparse %v", l, got)
		}
		groups := fam.LayerGroups(c, l)
		last := groups[len(groups)-1].Name
		if (last == GroupExperts) != (l == 3) || (last == GroupMLP) == (l == 3) {
			t.Errorf("layer %d runs %s", l, last)
		}
		has := fam.HasIn(c, GateProj, l)
		if has == (l == 3) || fam.HasIn(c, Router, l) != (l == 3) || fam.HasIn(c, ExpertDown, l) != (l == 3) {
			t.Errorf("layer %d: gate_proj %v, router %v", l, has, fam.HasIn(c, Router, l))
		}
	}
	if n := len(fam.Tensors(c)); n != fam.TensorCount(c) || n != 2+5*11+11 {
		t.Errorf("%d tensors, count %d", n, fam.TensorCount(c))
	}
}

// TestParseQwen3MoEShape parses configs/qwen3-30b-a3b.json, Qwen3-30B-A3B's published config,
// and checks its parameter count (30.5B, 3.3B of them read per token).
func TestParseQwen3MoEShape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "configs", "qwen3-30b-a3b.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, fam := parse(t, string(raw))
	n := params(fam, c)
	if n < 30.4e9 || n > 30.6e9 {
		t.Errorf("%d parameters; Qwen3-30B-A3B has 30.5B", n)
	}
	expert := 3 * 768 * 2048
	active := n - c.NumHiddenLayers*(c.NumExperts-c.NumExpertsPerTok)*expert
	if active < 3.2e9 || active > 3.4e9 {
		t.Errorf("%d parameters read per token; Qwen3-30B-A3B reads 3.3B", active)
	}
	if len(fam.CheckpointTensors(c)) != 48*(9+3*128)+3 {
		t.Errorf("%d checkpoint tensors", len(fam.CheckpointTensors(c)))
	}
}

// TestQwen3MoEConfigErrors: expert fields that cannot describe a model are refused naming the
// field as the file spells it.
func TestQwen3MoEConfigErrors(t *testing.T) {
	cfg, _ := qwen3MoETiny(t)
	for _, b := range []struct{ old, new, want string }{
		{`"num_experts_per_tok": 2`, `"num_experts_per_tok": 9`, `field "num_experts_per_tok": 9 exceeds num_experts (8)`},
		{`"num_local_experts": 8`, `"num_local_experts": 0`, `field "num_local_experts": expected a positive integer, got 0`},
		{`"num_local_experts": 8`, `"num_local_experts": 8, "num_experts": 16`, `field "num_local_experts": is 8 and num_experts is 16`},
		{`"mlp_only_layers": []`, `"mlp_only_layers": [2]`, `field "mlp_only_layers": names layer 2; the model has layers 0 to 1`},
		{`"mlp_only_layers": []`, `"mlp_only_layers": [-1]`, `field "mlp_only_layers": names layer -1`},
		{`"mlp_only_layers": []`, `"mlp_only_layers": "0"`, `field "mlp_only_layers": expected a list of integers`},
		{`"decoder_sparse_step": 1`, `"decoder_sparse_step": 0`, `field "decoder_sparse_step": expected a positive integer, got 0`},
		{`"moe_intermediate_size": 48`, `"moe_intermediate_size": 1048576`, `field "moe_intermediate_size": 1048576 is outside [1, 262144]`},
		{`"use_sliding_window": false`, `"use_sliding_window": true`, `field "use_sliding_window"`},
	} {
		if !strings.Contains(cfg, b.old) {
			t.Fatalf("test bug: %q not in the config", b.old)
		}
		_, err := ParseConfig([]byte(strings.Replace(cfg, b.old, b.new, 1)), "m/config.json")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), b.want) || !strings.HasPrefix(err.Error(), "m/config.json: ") {
			t.Errorf("%s: %v; want an error mentioning %s", b.new, err, b.want)
		}
	}
	// The Hub's spelling parses too.
	c, _ := parse(t, strings.Replace(cfg, `"num_local_experts": 8`, `"num_experts": 8`, 1))
	if c.NumExperts != 8 {
		t.Errorf("num_experts %d", c.NumExperts)
	}
	// A stored config is validated again when a bundle is opened.
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(d *Config) { d.NumExpertsPerTok = 9 }, "num_experts_per_tok"},
		{func(d *Config) { d.MLPOnlyLayers = []int{1, 0} }, "ascending"},
		{func(d *Config) { d.MLPOnlyLayers = []int{7} }, "names layer 7"},
		{func(d *Config) { d.NumExperts, d.NumHiddenLayers = MaxExperts, 4096 }, "expert matrices"},
		{func(d *Config) { d.Architecture = "Qwen3ForCausalLM" }, "has no experts"},
	} {
		d := *c
		tc.edit(&d)
		if err := Validate(&d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v; want an error mentioning %q", err, tc.want)
		}
	}
}
