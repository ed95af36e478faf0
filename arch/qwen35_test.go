package arch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// qwen35Tiny is the config of testdata/model-qwen3.5-tiny.json: three Gated DeltaNet layers and
// one gated attention layer.
const qwen35Tiny = `{"architectures":["Qwen3_5ForCausalLM"],"model_type":"qwen3_5_text","hidden_act":"silu",
"attention_bias":false,"bos_token_id":151643,"eos_token_id":151645,"max_position_embeddings":32768,"rms_norm_eps":1e-06,
"linear_conv_kernel_dim":4,"vocab_size":151936,"tie_word_embeddings":true,
"rope_parameters":{"rope_type":"default","rope_theta":10000000.0,"partial_rotary_factor":0.25},
"hidden_size":64,"intermediate_size":160,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,
"head_dim":32,"linear_num_key_heads":2,"linear_num_value_heads":4,"linear_key_head_dim":16,"linear_value_head_dim":16,
"layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]}`

func TestParseQwen35Tiny(t *testing.T) {
	c, fam := parse(t, qwen35Tiny)
	if !c.LinearLayer(0) || !c.LinearLayer(2) || c.LinearLayer(3) || c.RotaryDim() != 8 || c.QProjDim() != 256 ||
		c.LinearConvDim() != 2*2*16+4*16 || c.LinearValueDim() != 64 || !c.TieWordEmbeddings {
		t.Errorf("config %+v", c)
	}
	// The golden's tensor list: 14 tensors per DeltaNet layer, 11 in the attention layer, embed, norm.
	ts := fam.Tensors(c)
	if len(ts) != 1+3*14+11+1 || fam.TensorCount(c) != len(ts) {
		t.Fatalf("%d tensors (count %d)", len(ts), fam.TensorCount(c))
	}
	want := map[string]struct {
		shape   []int
		role    Role
		plusOne bool
		group   string
	}{
		"model.layers.0.linear_attn.in_proj_qkv.weight": {[]int{128, 64}, RoleLinear, false, GroupLinearIn},
		"model.layers.1.linear_attn.in_proj_b.weight":   {[]int{4, 64}, RoleLinear, false, GroupLinearIn},
		"model.layers.2.linear_attn.conv1d.weight":      {[]int{128, 1, 4}, RoleParam, false, ""},
		"model.layers.2.linear_attn.A_log":              {[]int{4}, RoleParam, false, ""},
		"model.layers.2.linear_attn.norm.weight":        {[]int{16}, RoleNorm, false, ""},
		"model.layers.2.linear_attn.out_proj.weight":    {[]int{64, 64}, RoleLinear, false, GroupLinearOut},
		"model.layers.0.input_layernorm.weight":         {[]int{64}, RoleNorm, true, ""},
		"model.layers.3.self_attn.q_proj.weight":        {[]int{256, 64}, RoleLinear, false, GroupQKV},
		"model.layers.3.self_attn.q_norm.weight":        {[]int{32}, RoleNorm, true, ""},
		"model.layers.3.self_attn.o_proj.weight":        {[]int{64, 128}, RoleLinear, false, GroupO},
		"model.norm.weight":                             {[]int{64}, RoleNorm, true, ""},
	}
	seen := 0
	for _, tt := range ts {
		if strings.HasPrefix(tt.Name, "model.layers.3.linear_attn") || strings.HasPrefix(tt.Name, "model.layers.0.self_attn") {
			t.Errorf("%s is in a layer of the other mixer", tt.Name)
		}
		w, ok := want[tt.Name]
		if !ok {
			continue
		}
		seen++
		if !equalInts(tt.Shape, w.shape) || tt.Role != w.role || tt.PlusOne != w.plusOne || tt.Group != w.group {
			t.Errorf("%s: %+v; want shape %v role %s plusOne %v group %q", tt.Name, tt, w.shape, w.role, w.plusOne, w.group)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d expected tensors", seen, len(want))
	}
	gs := fam.Groups(c)
	names := []string{}
	for _, g := range gs {
		names = append(names, g.Name)
	}
	if strings.Join(names, " ") != "attn_qkv attn_o linear_attn_in linear_attn_out mlp" {
		t.Fatalf("groups %v", names)
	}
	if gs[0].Out != 256+2*64 || gs[1].In != 128 || gs[2].Out != 128+64+4+4 || gs[3].In != 64 {
		t.Errorf("group widths %+v", gs)
	}
	if l0, l3 := fam.LayerGroups(c, 0), fam.LayerGroups(c, 3); len(l0) != 3 || l0[0].Name != GroupLinearIn || len(l3) != 3 || l3[0].Name != GroupQKV {
		t.Errorf("layer groups %+v / %+v", l0, l3)
	}
}

// TestParseQwen35Shape parses configs/qwen3.5-2b.json, the benchmark's model, and checks the
// tensor shapes the Hub's Qwen3.5-2B safetensors header lists.
func TestParseQwen35Shape(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "configs", "qwen3.5-2b.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, fam := parse(t, string(raw))
	shapes := map[string][]int{
		"model.layers.0.linear_attn.in_proj_qkv.weight": {6144, 2048},
		"model.layers.0.linear_attn.in_proj_z.weight":   {2048, 2048},
		"model.layers.0.linear_attn.in_proj_a.weight":   {16, 2048},
		"model.layers.0.linear_attn.conv1d.weight":      {6144, 1, 4},
		"model.layers.0.linear_attn.A_log":              {16},
		"model.layers.0.linear_attn.norm.weight":        {128},
		"model.layers.0.linear_attn.out_proj.weight":    {2048, 2048},
		"model.layers.3.self_attn.q_proj.weight":        {4096, 2048},
		"model.layers.23.self_attn.k_proj.weight":       {512, 2048},
		"model.layers.23.self_attn.q_norm.weight":       {256},
		"model.layers.22.mlp.down_proj.weight":          {2048, 6144},
	}
	linear := 0
	for l := range c.NumHiddenLayers {
		if c.LinearLayer(l) {
			linear++
		}
	}
	if linear != 18 || c.RotaryDim() != 64 {
		t.Errorf("%d linear layers, rotary %d; want 18 and 64", linear, c.RotaryDim())
	}
	for _, tt := range fam.Tensors(c) {
		if want, ok := shapes[tt.Name]; ok {
			if !equalInts(tt.Shape, want) {
				t.Errorf("%s: %v; want %v", tt.Name, tt.Shape, want)
			}
			delete(shapes, tt.Name)
		}
	}
	if len(shapes) != 0 {
		t.Errorf("missing %v", shapes)
	}
}

// TestQwen35Defaults: without layer_types every fourth layer attends (full_attention_interval),
// the DeltaNet sizes and the rotary share take transformers' defaults.
func TestQwen35Defaults(t *testing.T) {
	s := strings.Replace(qwen35Tiny, `,
"layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]`, `,"full_attention_interval":2`, 1)
	for _, f := range []string{`"linear_num_key_heads":2,`, `"linear_num_value_heads":4,`, `"linear_key_head_dim":16,`, `"linear_value_head_dim":16,`, `"linear_conv_kernel_dim":4,`} {
		s = strings.Replace(s, f, "", 1)
	}
	s = strings.Replace(s, `,"partial_rotary_factor":0.25`, "", 1)
	c, _ := parse(t, s)
	if strings.Join(c.LayerTypes, " ") != "linear_attention full_attention linear_attention full_attention" {
		t.Errorf("layer types %v", c.LayerTypes)
	}
	if c.LinearNumKeyHeads != 16 || c.LinearNumValueHeads != 32 || c.LinearKeyHeadDim != 128 || c.LinearValueHeadDim != 128 ||
		c.LinearConvKernelDim != 4 || c.PartialRotaryFactor != 0.25 {
		t.Errorf("defaults %+v", c)
	}
}

// TestQwen35Multimodal parses the config as the Hub's Qwen3.5 checkpoints ship it: the language
// model under text_config, tensors under model.language_model.
func TestQwen35Multimodal(t *testing.T) {
	inner := strings.Replace(qwen35Tiny, `"architectures":["Qwen3_5ForCausalLM"],`, ``, 1)
	s := `{"architectures":["Qwen3_5ForConditionalGeneration"],"model_type":"qwen3_5","tie_word_embeddings":true,
"image_token_id":248056,"vision_config":{"depth":2,"hidden_size":32},"text_config":` + inner + `}`
	c, fam := parse(t, s)
	if c.Architecture != "Qwen3_5ForConditionalGeneration" || c.HiddenSize != 64 || !c.LinearLayer(0) || c.ModelType != "qwen3_5_text" {
		t.Errorf("config %+v", c)
	}
	names := map[string]bool{}
	for _, tt := range fam.Tensors(c) {
		names[tt.Name] = true
	}
	for _, n := range []string{"model.language_model.embed_tokens.weight", "model.language_model.layers.0.linear_attn.A_log",
		"model.language_model.layers.3.self_attn.q_proj.weight", "model.language_model.norm.weight"} {
		if !names[n] {
			t.Errorf("no tensor %s", n)
		}
	}
	// A model field's error names it where the file has it.
	_, err := ParseConfig([]byte(strings.Replace(s, `"hidden_size":64`, `"hidden_size":-64`, 1)), "m/config.json")
	if err == nil || !strings.Contains(err.Error(), `field "text_config.hidden_size"`) {
		t.Errorf("bad hidden_size: %v", err)
	}
	_, err = ParseConfig([]byte(`{"architectures":["Qwen3_5ForConditionalGeneration"],"hidden_size":64}`), "m/config.json")
	if err == nil || !strings.Contains(err.Error(), `field "text_config": missing`) {
		t.Errorf("no text_config: %v", err)
	}
	_, err = ParseConfig([]byte(strings.Replace(s, `"model_type":"qwen3_5","tie_word_embeddings":true`, `"model_type":"qwen3_5","tie_word_embeddings":false`, 1)), "m/config.json")
	if err == nil || !strings.Contains(err.Error(), `field "tie_word_embeddings"`) {
		t.Errorf("contradicting tie_word_embeddings: %v", err)
	}
}

// TestQwen35ConfigErrors: bad layer types and DeltaNet sizes are refused naming the field.
func TestQwen35ConfigErrors(t *testing.T) {
	for _, b := range []struct{ old, new, want string }{
		{`"layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]`,
			`"layer_types":["linear_attention","full_attention"]`, `field "layer_types": lists 2 layers; num_hidden_layers is 4`},
		{`"full_attention"]`, `"sliding_attention"]`, `field "layer_types": layer 3 is "sliding_attention"; expected "full_attention" or "linear_attention"`},
		{`"linear_num_value_heads":4`, `"linear_num_value_heads":3`, `field "linear_num_value_heads": 3 is not a multiple of linear_num_key_heads (2)`},
		{`"linear_conv_kernel_dim":4`, `"linear_conv_kernel_dim":0`, `field "linear_conv_kernel_dim": expected a positive integer`},
		{`"linear_conv_kernel_dim":4`, `"linear_conv_kernel_dim":100`, `field "linear_conv_kernel_dim": 100 is outside [1, 64]`},
		{`"linear_key_head_dim":16`, `"linear_key_head_dim":"16"`, `field "linear_key_head_dim": expected a number`},
	} {
		if !strings.Contains(qwen35Tiny, b.old) {
			t.Fatalf("test bug: %q not in the config", b.old)
		}
		_, err := ParseConfig([]byte(strings.Replace(qwen35Tiny, b.old, b.new, 1)), "q/config.json")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), b.want) || !strings.HasPrefix(err.Error(), "q/config.json: ") {
			t.Errorf("%s: %v; want an error mentioning %s", b.new, err, b.want)
		}
	}
	// A family without DeltaNet layers refuses linear_attention.
	g := strings.Replace(gemma3Config, `"sliding_window_pattern":6,`, `"layer_types":["linear_attention"],`, 1)
	g = strings.Replace(g, `"num_hidden_layers":26`, `"num_hidden_layers":1`, 1)
	if _, err := ParseConfig([]byte(g), "g/config.json"); err == nil || !strings.Contains(err.Error(), `layer 0 is "linear_attention"`) {
		t.Errorf("Gemma 3 with a linear-attention layer: %v", err)
	}
	// A stored config is validated again when a bundle is opened.
	c, _ := parse(t, qwen35Tiny)
	d := *c
	d.LinearNumKeyHeads = 0
	if err := Validate(&d); err == nil || !strings.Contains(err.Error(), "linear_num_key_heads") {
		t.Errorf("Validate with 0 key heads: %v", err)
	}
	d = *c
	d.LinearKeyHeadDim, d.LinearValueHeadDim = 1<<16, 1<<16 // a 16 GiB state per layer
	if err := Validate(&d); err == nil || !strings.Contains(err.Error(), "recurrent state") {
		t.Errorf("Validate with 65536x65536 heads: %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
