package arch

import (
	"strings"
	"testing"
)

// Mistral-7B-Instruct-v0.3's config.json as published (the fields anepack reads).
const mistralConfig = `{"architectures":["MistralForCausalLM"],"bos_token_id":1,"eos_token_id":2,"head_dim":128,
"hidden_act":"silu","hidden_size":4096,"intermediate_size":14336,"max_position_embeddings":32768,"model_type":"mistral",
"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_theta":1000000.0,
"sliding_window":null,"tie_word_embeddings":false,"vocab_size":32768}`

// SmolLM3-3B's shape, with no_rope_layers left to no_rope_layer_interval.
const smollm3Config = `{"architectures":["SmolLM3ForCausalLM"],"hidden_size":2048,"intermediate_size":11008,
"num_hidden_layers":36,"num_attention_heads":16,"num_key_value_heads":4,"vocab_size":128256,"max_position_embeddings":65536,
"rms_norm_eps":1e-06,"rope_theta":5000000.0,"no_rope_layer_interval":4,"use_sliding_window":false,"sliding_window":null,
"tie_word_embeddings":true,"bos_token_id":128000,"eos_token_id":128012}`

// Olmo-3-7B's shape in transformers 5's spelling (rope parameters per layer type).
const olmo3Config = `{"architectures":["Olmo3ForCausalLM"],"hidden_size":4096,"intermediate_size":11008,
"num_hidden_layers":4,"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":100278,"max_position_embeddings":65536,
"rms_norm_eps":1e-06,"sliding_window":4096,"layer_types":["sliding_attention","sliding_attention","sliding_attention","full_attention"],
"rope_parameters":{"sliding_attention":{"rope_type":"default","rope_theta":500000.0},"full_attention":{"rope_type":"default","rope_theta":500000.0}},
"tie_word_embeddings":false,"eos_token_id":100257}`

func TestParseMistralConfig(t *testing.T) {
	c, fam := parse(t, mistralConfig)
	if c.HeadDim != 128 || c.TieWordEmbeddings || c.RopeTheta != 1e6 || len(c.LayerTypes) != 0 || c.SlidingWindow != 0 {
		t.Errorf("config %+v", c)
	}
	// Mistral 7B: 7248023552 parameters.
	if n := params(fam, c); n != 7248023552 {
		t.Errorf("%d parameters; want 7248023552", n)
	}
	// v0.1 slides a 4096-position window over every layer, rotated like the others.
	w, _ := parse(t, strings.Replace(mistralConfig, `"sliding_window":null`, `"sliding_window":4096`, 1))
	if w.SlidingWindow != 4096 || len(w.LayerTypes) != 32 || !w.Sliding(0) || !w.Sliding(31) || w.RopeLocalTheta != w.RopeTheta {
		t.Errorf("sliding_window 4096: window %d, layer types %v, local theta %v", w.SlidingWindow, w.LayerTypes, w.RopeLocalTheta)
	}
	_, err := ParseConfig([]byte(strings.Replace(mistralConfig, `"sliding_window":null`, `"sliding_window":0`, 1)), "m/config.json")
	if err == nil || !strings.Contains(err.Error(), `m/config.json: field "sliding_window"`) {
		t.Errorf("sliding_window 0: %v; want an error naming the file and field", err)
	}
}

func TestParseSmolLM3Config(t *testing.T) {
	c, _ := parse(t, smollm3Config)
	if len(c.NoRopeLayers) != 36 || !c.RopeLayer(0) || !c.RopeLayer(2) || c.RopeLayer(3) || c.RopeLayer(35) || !c.RopeLayer(34) {
		t.Errorf("no_rope_layers %v", c.NoRopeLayers)
	}
	if len(c.LayerTypes) != 0 || c.SlidingWindow != 0 {
		t.Errorf("layer types %v, window %d; want none", c.LayerTypes, c.SlidingWindow)
	}
	list := strings.Replace(smollm3Config, `"num_hidden_layers":36`, `"num_hidden_layers":3`, 1)
	list = strings.Replace(list, `"no_rope_layer_interval":4`, `"no_rope_layers":[0,1,1]`, 1)
	d, _ := parse(t, list)
	if d.RopeLayer(0) || !d.RopeLayer(1) || !d.RopeLayer(2) {
		t.Errorf("no_rope_layers [0,1,1] read as %v", d.NoRopeLayers)
	}
	sliding := strings.Replace(list, `"use_sliding_window":false,"sliding_window":null`, `"sliding_window":8,"layer_types":["full_attention","sliding_attention","full_attention"]`, 1)
	s, _ := parse(t, sliding)
	if s.Sliding(0) || !s.Sliding(1) || s.SlidingWindow != 8 || s.RopeLocalTheta != s.RopeTheta {
		t.Errorf("sliding layer 1: %v window %d local theta %v", s.LayerTypes, s.SlidingWindow, s.RopeLocalTheta)
	}
	bad := []struct{ old, new, want string }{
		{`"no_rope_layers":[0,1,1]`, `"no_rope_layers":[0,1]`, `s/config.json: field "no_rope_layers": lists 2 layers; num_hidden_layers is 3`},
		{`"no_rope_layers":[0,1,1]`, `"no_rope_layers":[0,2,1]`, `field "no_rope_layers": layer 1 is 2; expected 1 (RoPE) or 0 (no RoPE)`},
		{`"no_rope_layers":[0,1,1]`, `"no_rope_layers":"all"`, `field "no_rope_layers": expected a list of integers`},
		{`"use_sliding_window":false`, `"layer_types":["full_attention","full_attention"]`, `field "layer_types": lists 2 layers; num_hidden_layers is 3`},
		{`"use_sliding_window":false`, `"layer_types":["full_attention","chunked_attention","full_attention"]`, `field "layer_types": layer 1 is "chunked_attention"; expected "full_attention" or "sliding_attention"`},
	}
	for _, b := range bad {
		_, err := ParseConfig([]byte(strings.Replace(list, b.old, b.new, 1)), "s/config.json")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v; want an error mentioning %s", b.new, err, b.want)
		}
	}
}

func TestParseOlmoConfigs(t *testing.T) {
	c, fam := parse(t, olmo3Config)
	if c.SlidingWindow != 4096 || c.RopeTheta != 5e5 || c.RopeLocalTheta != 5e5 || !c.Sliding(0) || c.Sliding(3) {
		t.Errorf("config %+v", c)
	}
	// No pre-norms; q and k normed over the whole projection.
	var names []string
	for _, tt := range fam.Tensors(c) {
		if tt.Layer == 0 && tt.Role == RoleNorm {
			names = append(names, tt.Name)
		}
		if tt.Slot == QNorm && tt.Shape[0] != 4096 || tt.Slot == KNorm && tt.Shape[0] != 4096 {
			t.Errorf("%s has shape %v; want [4096]", tt.Name, tt.Shape)
		}
	}
	want := "model.layers.0.self_attn.q_norm.weight model.layers.0.self_attn.k_norm.weight model.layers.0.post_attention_layernorm.weight model.layers.0.post_feedforward_layernorm.weight"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer 0's norms: %s; want %s", got, want)
	}
	// Olmo3Config's default layer types: every fourth layer attends to everything.
	def, _ := parse(t, strings.Replace(olmo3Config, `"layer_types":["sliding_attention","sliding_attention","sliding_attention","full_attention"],`, "", 1))
	if !def.Sliding(0) || !def.Sliding(2) || def.Sliding(3) {
		t.Errorf("default layer types %v", def.LayerTypes)
	}
	olmo2 := strings.Replace(olmo3Config, `"Olmo3ForCausalLM"`, `"Olmo2ForCausalLM"`, 1)
	olmo2 = strings.Replace(olmo2, `"sliding_window":4096,"layer_types":["sliding_attention","sliding_attention","sliding_attention","full_attention"],`, "", 1)
	olmo2 = strings.Replace(olmo2, `"rope_parameters":{"sliding_attention":{"rope_type":"default","rope_theta":500000.0},"full_attention":{"rope_type":"default","rope_theta":500000.0}}`, `"rope_theta":500000`, 1)
	o2, fam2 := parse(t, olmo2)
	if len(o2.LayerTypes) != 0 || o2.RopeTheta != 5e5 || fam2.Has(o2, InputNorm) || fam2.Has(o2, MLPNorm) || Shape(o2, QNorm)[0] != 4096 {
		t.Errorf("Olmo2: %+v", o2)
	}
	bad := []struct{ old, new, want string }{
		{`"full_attention"]`, `"full_attention","full_attention"]`, `o/config.json: field "layer_types": lists 5 layers; num_hidden_layers is 4`},
		{`"full_attention"]`, `"linear_attention"]`, `field "layer_types": layer 3 is "linear_attention"; expected "full_attention" or "sliding_attention"`},
		{`"full_attention":{"rope_type":"default"`, `"full_attention":{"rope_type":"yarn"`, `field "rope_parameters.full_attention.rope_type": "yarn" is not supported`},
		{`"sliding_window":4096`, `"sliding_window":-1`, `field "sliding_window": expected a positive integer`},
	}
	for _, b := range bad {
		_, err := ParseConfig([]byte(strings.Replace(olmo3Config, b.old, b.new, 1)), "o/config.json")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v; want an error mentioning %s", b.new, err, b.want)
		}
	}
}
