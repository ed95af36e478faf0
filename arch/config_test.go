package arch

import (
	"errors"
	"sort"
	"strings"
	"testing"
)

const qwenConfig = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":896,"intermediate_size":4864,
"num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,
"max_position_embeddings":32768,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":true,
"bos_token_id":151643,"eos_token_id":[151645,151643],"hidden_act":"silu","rope_scaling":null}`

// Qwen3-0.6B's config.json as published (the fields anepack reads).
const qwen3Config = `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"bos_token_id":151643,
"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":1024,"intermediate_size":3072,
"max_position_embeddings":40960,"max_window_layers":28,"model_type":"qwen3","num_attention_heads":16,
"num_hidden_layers":28,"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,
"sliding_window":null,"tie_word_embeddings":true,"use_sliding_window":false,"vocab_size":151936}`

// Llama-3.2-1B-Instruct's config.json as published (the fields anepack reads).
const llamaConfig = `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"bos_token_id":128000,
"eos_token_id":[128001,128008,128009],"head_dim":64,"hidden_act":"silu","hidden_size":2048,
"intermediate_size":8192,"max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama",
"num_attention_heads":32,"num_hidden_layers":16,"num_key_value_heads":8,"pretraining_tp":1,"rms_norm_eps":1e-05,
"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
"rope_theta":500000.0,"tie_word_embeddings":true,"vocab_size":128256}`

func parse(t *testing.T, s string) (*Config, *Family) {
	t.Helper()
	c, err := ParseConfig([]byte(s), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	fam, err := Lookup(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, fam
}

func params(fam *Family, c *Config) int {
	n := 0
	for _, t := range fam.Tensors(c) {
		n += Elements(t.Shape)
	}
	return n
}

func TestParseQwen25Config(t *testing.T) {
	c, fam := parse(t, qwenConfig)
	if c.HeadDim != 64 || c.NumKeyValueHeads != 2 || !c.TieWordEmbeddings || c.RopeTheta != 1e6 || c.RMSNormEps != 1e-6 || c.RopeScaling != nil {
		t.Errorf("config %+v", c)
	}
	if len(c.EOSTokenIDs) != 2 || c.EOSTokenIDs[0] != 151645 || c.BOSTokenID != 151643 {
		t.Errorf("token ids: bos %d eos %v", c.BOSTokenID, c.EOSTokenIDs)
	}
	ts := fam.Tensors(c)
	// embed + 24 layers x 12 + final norm; tied, so no lm_head.
	if len(ts) != 1+24*12+1 || fam.TensorCount(c) != len(ts) {
		t.Fatalf("%d tensors (count %d)", len(ts), fam.TensorCount(c))
	}
	for _, tt := range ts {
		if tt.Name == "model.layers.3.self_attn.k_proj.weight" && (tt.Shape[0] != 128 || tt.Shape[1] != 896 || tt.Group != GroupQKV || tt.Slot != KProj) {
			t.Errorf("k_proj %+v", tt)
		}
		if tt.Name == "model.layers.3.post_attention_layernorm.weight" && (tt.Slot != MLPNorm || tt.Role != RoleNorm || tt.PlusOne) {
			t.Errorf("post_attention_layernorm %+v", tt)
		}
	}
	if n := params(fam, c); n != 494032768 { // Qwen2.5-0.5B's published parameter count
		t.Errorf("%d parameters; want 494032768", n)
	}
	qkv, _ := fam.Group(c, GroupQKV)
	if qkv.Out != 896+2*128 || !qkv.HasBias() || qkv.Biases[1] != KBias {
		t.Errorf("qkv group %+v", qkv)
	}
	if o, _ := fam.Group(c, GroupO); o.HasBias() {
		t.Errorf("Qwen2's o_proj has no bias: %+v", o)
	}
}

func TestParseQwen3Config(t *testing.T) {
	c, fam := parse(t, qwen3Config)
	if c.HeadDim != 128 || c.QDim() != 2048 || c.RotaryDim() != 128 {
		t.Errorf("head_dim %d, q %d, rotary %d", c.HeadDim, c.QDim(), c.RotaryDim())
	}
	var qn, qb, o bool
	for _, tt := range fam.Tensors(c) {
		switch tt.Name {
		case "model.layers.0.self_attn.q_norm.weight":
			qn = tt.Shape[0] == 128 && tt.Slot == QNorm
		case "model.layers.0.self_attn.q_proj.bias":
			qb = true
		case "model.layers.0.self_attn.o_proj.weight":
			o = tt.Shape[0] == 1024 && tt.Shape[1] == 2048
		}
	}
	if !qn || qb || !o {
		t.Errorf("q_norm [128] %v, q bias present %v, o_proj [1024, 2048] %v", qn, qb, o)
	}
	// Qwen3-0.6B: 596049920 parameters without the tied head (440 M non-embedding + 155.6 M embedding).
	if n := params(fam, c); n != 596049920 {
		t.Errorf("%d parameters; want 596049920", n)
	}
	biased, _ := ParseConfig([]byte(strings.Replace(qwen3Config, `"attention_bias":false`, `"attention_bias":true`, 1)), "c.json")
	if o, _ := fam.Group(biased, GroupO); !o.HasBias() {
		t.Error("attention_bias: true must give o_proj a bias in Qwen3")
	}
}

func TestParseLlamaConfig(t *testing.T) {
	c, fam := parse(t, llamaConfig)
	rs := c.RopeScaling
	if rs == nil || rs.Type != RopeLlama3 || rs.Factor != 32 || rs.LowFreqFactor != 1 || rs.HighFreqFactor != 4 || rs.OriginalMaxPositionEmbeddings != 8192 {
		t.Fatalf("rope scaling %+v", rs)
	}
	if c.RMSNormEps != 1e-5 || c.RopeTheta != 5e5 || len(c.EOSTokenIDs) != 3 {
		t.Errorf("config %+v", c)
	}
	// Llama-3.2-1B: 1235814400 parameters (tied).
	if n := params(fam, c); n != 1235814400 {
		t.Errorf("%d parameters; want 1235814400", n)
	}
	for _, g := range fam.Groups(c) {
		if g.HasBias() {
			t.Errorf("group %s has a bias with attention_bias and mlp_bias false", g.Name)
		}
	}
	mlp, _ := ParseConfig([]byte(strings.Replace(llamaConfig, `"mlp_bias":false`, `"mlp_bias":true`, 1)), "c.json")
	if g, _ := fam.Group(mlp, GroupMLP); !g.HasBias() || g.Biases[2] != DownBias {
		t.Errorf("mlp_bias: true: %+v", g)
	}
}

// TestRopeParameters reads transformers 5's rope_parameters spelling.
func TestRopeParameters(t *testing.T) {
	s := strings.Replace(llamaConfig, `"rope_scaling":{"factor":32.0,`, `"rope_parameters":{"rope_theta":250000.0,"factor":8.0,`, 1)
	s = strings.Replace(s, `"rope_theta":500000.0,`, ``, 1)
	c, _ := parse(t, s)
	if c.RopeTheta != 2.5e5 || c.RopeScaling == nil || c.RopeScaling.Factor != 8 {
		t.Errorf("theta %v scaling %+v", c.RopeTheta, c.RopeScaling)
	}
	d, _ := parse(t, strings.Replace(qwenConfig, `"rope_scaling":null`, `"rope_parameters":{"rope_type":"default","rope_theta":1e7,"partial_rotary_factor":0.25}`, 1))
	if d.RopeTheta != 1e7 || d.RopeScaling != nil || d.RotaryDim() != 16 {
		t.Errorf("theta %v scaling %+v rotary %d", d.RopeTheta, d.RopeScaling, d.RotaryDim())
	}
}

// TestConfigErrors checks that each bad config names the file, the field and what was expected.
func TestConfigErrors(t *testing.T) {
	edit := func(base, old, new string) string {
		if !strings.Contains(base, old) {
			t.Fatalf("test bug: %q not in the config", old)
		}
		return strings.Replace(base, old, new, 1)
	}
	q := func(old, new string) string { return edit(qwenConfig, old, new) }
	l := func(old, new string) string { return edit(llamaConfig, old, new) }
	cases := []struct{ config, want string }{
		{"[1,2]", "not a JSON object"},
		{q(`"hidden_size":896,`, ""), `field "hidden_size": missing`},
		{q(`"hidden_size":896`, `"hidden_size":"896"`), `field "hidden_size": expected a number`},
		{q(`"hidden_size":896`, `"hidden_size":-1`), `field "hidden_size": expected a positive integer`},
		{q(`"num_hidden_layers":24`, `"num_hidden_layers":2.5`), `field "num_hidden_layers": expected an integer`},
		{q(`"num_hidden_layers":24`, `"num_hidden_layers":10000000`), `field "num_hidden_layers": 10000000 is outside [1, 4096]`},
		{q(`"num_key_value_heads":2`, `"num_key_value_heads":3`), `field "num_key_value_heads": 3 must divide`},
		{q(`"num_attention_heads":14`, `"num_attention_heads":5`), `field "num_attention_heads"`},
		{q(`["Qwen2ForCausalLM"]`, `["MambaForCausalLM"]`), `"MambaForCausalLM" is not supported; supported: GPT2LMHeadModel, Gemma3ForCausalLM, LlamaForCausalLM, MistralForCausalLM, Olmo2ForCausalLM, Olmo3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, SmolLM3ForCausalLM`},
		{q(`"architectures":["Qwen2ForCausalLM"],`, ""), `field "architectures": missing`},
		{q(`"hidden_act":"silu"`, `"hidden_act":"gelu"`), `field "hidden_act": "gelu" is not supported`},
		{q(`"rope_scaling":null`, `"rope_scaling":{"type":"yarn","factor":4}`), `field "rope_scaling.rope_type": "yarn" is not supported for Qwen2ForCausalLM`},
		{q(`"rope_scaling":null`, `"rope_scaling":{"factor":4}`), `field "rope_scaling.rope_type": missing`},
		{q(`"rms_norm_eps":1e-06`, `"rms_norm_eps":0`), `field "rms_norm_eps": expected a positive number`},
		{q(`"eos_token_id":[151645,151643]`, `"eos_token_id":"x"`), `field "eos_token_id"`},
		{q(`"eos_token_id":[151645,151643]`, `"eos_token_id":[200000]`), `field "eos_token_id": 200000 is outside the vocabulary`},
		{q(`"tie_word_embeddings":true`, `"tie_word_embeddings":1`), `field "tie_word_embeddings": expected true or false`},
		{q(`"rope_scaling":null`, `"use_sliding_window":true`), `field "use_sliding_window"`},
		{l(`"factor":32.0,`, ``), `field "rope_scaling.factor": missing; rope type "llama3" needs it`},
		{l(`"factor":32.0,`, `"factor":"32",`), `field "rope_scaling.factor": expected a number`},
		{l(`"factor":32.0,`, `"factor":0.5,`), `field "rope_scaling.factor": 0.5; expected a number >= 1`},
		{l(`"rope_type":"llama3"`, `"rope_type":"longrope"`), `field "rope_scaling.rope_type": "longrope" is not supported for LlamaForCausalLM; expected "default" or "llama3"`},
		{l(`"high_freq_factor":4.0`, `"high_freq_factor":0.5`), `field "rope_scaling.high_freq_factor"`},
		{l(`"original_max_position_embeddings":8192,`, ``), `field "rope_scaling.original_max_position_embeddings": missing`},
		{l(`"head_dim":64`, `"head_dim":63`), `field "head_dim": 63`},
	}
	for _, tc := range cases {
		_, err := ParseConfig([]byte(tc.config), "m/config.json")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m/config.json: ") {
			t.Errorf("error %v; want a ConfigError for m/config.json mentioning %q", err, tc.want)
		}
	}
}

func TestHeadDimOverride(t *testing.T) {
	c, fam := parse(t, strings.Replace(qwenConfig, `"hidden_size":896`, `"hidden_size":896,"head_dim":128`, 1))
	if c.HeadDim != 128 {
		t.Fatalf("head_dim %d", c.HeadDim)
	}
	for _, tt := range fam.Tensors(c) {
		if tt.Slot == QProj && tt.Shape[0] != 14*128 {
			t.Errorf("q_proj shape %v with head_dim 128", tt.Shape)
		}
	}
}

// TestValidateStoredConfig checks what the runtime relies on when it opens a bundle whose
// manifest it must not trust.
func TestValidateStoredConfig(t *testing.T) {
	c, _ := parse(t, llamaConfig)
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.NumHiddenLayers = 1 << 40 }, "num_hidden_layers"},
		{func(c *Config) { c.Architecture = "GPTNeoX" }, "not supported"},
		{func(c *Config) { c.HeadDim = 0 }, "head_dim"},
		{func(c *Config) { c.RopeScaling.Type = "yarn" }, "rope_type"},
		{func(c *Config) { c.RopeScaling.OriginalMaxPositionEmbeddings = 0 }, "original_max_position_embeddings"},
		{func(c *Config) { c.PartialRotaryFactor = 2 }, "partial_rotary_factor"},
		{func(c *Config) { c.HiddenAct = "relu" }, "hidden_act"},
	} {
		d := *c
		rs := *c.RopeScaling
		d.RopeScaling = &rs
		tc.edit(&d)
		if err := Validate(&d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v; want an error about %s", err, tc.want)
		}
	}
	if err := Validate(c); err != nil {
		t.Errorf("a parsed config fails Validate: %v", err)
	}
}

// openai-community/gpt2's config.json (the fields anepack reads).
const gpt2Config = `{"activation_function":"gelu_new","architectures":["GPT2LMHeadModel"],"attn_pdrop":0.1,
"bos_token_id":50256,"embd_pdrop":0.1,"eos_token_id":50256,"initializer_range":0.02,"layer_norm_epsilon":1e-05,
"model_type":"gpt2","n_ctx":1024,"n_embd":768,"n_head":12,"n_layer":12,"n_positions":1024,"resid_pdrop":0.1,
"summary_activation":null,"vocab_size":50257}`

func TestParseGPT2Config(t *testing.T) {
	c, fam := parse(t, gpt2Config)
	if c.HiddenSize != 768 || c.IntermediateSize != 3072 || c.NumKeyValueHeads != 12 || c.MaxPositionEmbeddings != 1024 ||
		c.RMSNormEps != 1e-5 || c.HiddenAct != ActGeluNew || !c.TieWordEmbeddings {
		t.Errorf("config %+v", c)
	}
	// GPT-2 small: 124439808 parameters (the LM head is wte).
	if n := params(fam, c); n != 124439808 {
		t.Errorf("%d parameters; want 124439808", n)
	}
	var seen int
	for _, tt := range fam.Tensors(c) {
		switch tt.Name {
		case "transformer.h.0.attn.c_attn.weight":
			seen++
			if tt.Slot != QKVProj || !tt.Transposed || tt.Shape[0] != 2304 || tt.CheckpointShape()[0] != 768 {
				t.Errorf("c_attn %+v", tt)
			}
		case "transformer.wpe.weight", "transformer.h.11.ln_2.bias", "transformer.ln_f.bias":
			seen++
		}
	}
	if seen != 4 {
		t.Errorf("found %d of the 4 expected tensors", seen)
	}
	qkv, _ := fam.Group(c, GroupQKV)
	mlp, _ := fam.Group(c, GroupMLP)
	if len(qkv.Linears) != 1 || qkv.Biases[0] != QKVBias || qkv.Out != 2304 || mlp.Gated() || len(mlp.Linears) != 2 || mlp.Biases[1] != DownBias {
		t.Errorf("groups %+v %+v", qkv, mlp)
	}
	if _, err := ParseConfig([]byte(strings.Replace(gpt2Config, `"n_embd":768`, `"n_embd":768,"scale_attn_by_inverse_layer_idx":true`, 1)), "c.json"); err == nil ||
		!strings.Contains(err.Error(), `"scale_attn_by_inverse_layer_idx"`) {
		t.Errorf("scale_attn_by_inverse_layer_idx: %v", err)
	}
	if _, err := ParseConfig([]byte(strings.Replace(gpt2Config, `"n_embd":768`, `"n_embd":-768`, 1)), "c.json"); err == nil ||
		!strings.Contains(err.Error(), `field "n_embd"`) {
		t.Errorf("an error about hidden_size must name n_embd, GPT-2's spelling: %v", err)
	}
}

// google/gemma-3-1b-it's config.json (the fields anepack reads), in the transformers 4 spelling.
const gemma3Config = `{"architectures":["Gemma3ForCausalLM"],"attention_bias":false,"attn_logit_softcapping":null,
"bos_token_id":2,"eos_token_id":[1,106],"final_logit_softcapping":null,"head_dim":256,
"hidden_activation":"gelu_pytorch_tanh","hidden_size":1152,"intermediate_size":6912,"max_position_embeddings":32768,
"model_type":"gemma3_text","num_attention_heads":4,"num_hidden_layers":26,"num_key_value_heads":1,
"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,
"rope_local_base_freq":10000,"rope_scaling":null,"rope_theta":1000000,"sliding_window":512,"sliding_window_pattern":6,"vocab_size":262144}`

func TestParseGemma3Config(t *testing.T) {
	c, fam := parse(t, gemma3Config)
	if c.HiddenAct != ActGeluTanh || c.SlidingWindow != 512 || c.RopeLocalTheta != 1e4 || c.QueryPreAttnScalar != 256 || !c.TieWordEmbeddings {
		t.Errorf("config %+v", c)
	}
	if len(c.LayerTypes) != 26 || !c.Sliding(0) || c.Sliding(5) || !c.Sliding(6) || c.Sliding(23) || !c.Sliding(25) {
		t.Errorf("layer types %v", c.LayerTypes)
	}
	// Gemma 3 1B: 999885952 parameters.
	if n := params(fam, c); n != 999885952 {
		t.Errorf("%d parameters; want 999885952", n)
	}
	for _, tt := range fam.Tensors(c) {
		if tt.Name == "model.layers.0.pre_feedforward_layernorm.weight" && (tt.Slot != MLPNorm || !tt.PlusOne) {
			t.Errorf("pre_feedforward_layernorm %+v", tt)
		}
	}
	v5 := strings.Replace(gemma3Config, `"rope_local_base_freq":10000,"rope_scaling":null,"rope_theta":1000000,`,
		`"rope_parameters":{"full_attention":{"rope_type":"linear","factor":8.0,"rope_theta":1000000.0},"sliding_attention":{"rope_type":"default","rope_theta":10000.0}},`, 1)
	v5 = strings.Replace(v5, `"sliding_window_pattern":6,`, `"layer_types":["sliding_attention","full_attention"],`, 1)
	v5 = strings.Replace(v5, `"num_hidden_layers":26`, `"num_hidden_layers":2`, 1)
	d, _ := parse(t, v5)
	if d.RopeTheta != 1e6 || d.RopeLocalTheta != 1e4 || d.RopeScaling == nil || d.RopeScaling.Type != RopeLinear || d.RopeScaling.Factor != 8 || !d.Sliding(0) || d.Sliding(1) {
		t.Errorf("transformers 5 spelling: %+v scaling %+v", d, d.RopeScaling)
	}
	bad := []struct{ old, new, want string }{
		{`"final_logit_softcapping":null`, `"final_logit_softcapping":30.0`, `field "final_logit_softcapping"`},
		{`"sliding_window_pattern":6,`, `"layer_types":["sliding_attention"],`, `field "layer_types": lists 1 layers; num_hidden_layers is 26`},
		{`"hidden_activation":"gelu_pytorch_tanh"`, `"hidden_activation":"silu"`, `field "hidden_activation"`},
	}
	for _, b := range bad {
		_, err := ParseConfig([]byte(strings.Replace(gemma3Config, b.old, b.new, 1)), "g/config.json")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v; want an error mentioning %s", b.new, err, b.want)
		}
	}
}

// TestSupported: the list Supported gives and the answers of IsSupported come from the one
// table, and an unknown name is refused by both.
func TestSupported(t *testing.T) {
	names := Supported()
	if len(names) == 0 || !sort.StringsAreSorted(names) {
		t.Fatalf("Supported() = %v; want a sorted, non-empty list", names)
	}
	for _, n := range names {
		if !IsSupported(n) {
			t.Errorf("IsSupported(%q) = false for a name Supported lists", n)
		}
	}
	if IsSupported("MambaForCausalLM") || IsSupported("") {
		t.Errorf("IsSupported accepted an architecture that is not in the table")
	}
}
