package arch

// gpt2 is Hugging Face's GPT2LMHeadModel (transformers models/gpt2): learned position
// embeddings, LayerNorm with biases, Conv1D weights stored [in, out] (transposed once at pack
// time), q | k | v fused in c_attn, biases on every projection, a plain gelu_new MLP, and the LM
// head tied to wte. Checkpoints name tensors with or without the "transformer." prefix.
var gpt2 = &Family{
	Architecture:        "GPT2LMHeadModel",
	Norm:                LayerNorm,
	MLP:                 PlainMLP,
	Positions:           LearnedPositions,
	Activations:         []string{ActGeluNew, ActGeluTanh},
	Bias:                BiasRules{QKV: BiasAlways, O: BiasAlways, MLP: BiasAlways},
	TieDefault:          true,
	DefaultEps:          1e-5,
	Conv1D:              true,
	IntermediateDefault: 4,
	OptionalPrefix:      "transformer.",
	Ignore:              []string{".attn.bias", ".attn.masked_bias"},
	LayerPrefix:         "transformer.h.",
	Names: map[Slot]string{
		EmbedTokens:   "transformer.wte.weight",
		PosEmbed:      "transformer.wpe.weight",
		FinalNorm:     "transformer.ln_f.weight",
		FinalNormBias: "transformer.ln_f.bias",
		InputNorm:     "ln_1.weight",
		InputNormBias: "ln_1.bias",
		QKVProj:       "attn.c_attn.weight",
		QKVBias:       "attn.c_attn.bias",
		OProj:         "attn.c_proj.weight",
		OBias:         "attn.c_proj.bias",
		MLPNorm:       "ln_2.weight",
		MLPNormBias:   "ln_2.bias",
		UpProj:        "mlp.c_fc.weight",
		UpBias:        "mlp.c_fc.bias",
		DownProj:      "mlp.c_proj.weight",
		DownBias:      "mlp.c_proj.bias",
	},
	Spellings: map[string]string{
		"hidden_size": "n_embd", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
		"max_position_embeddings": "n_positions", "rms_norm_eps": "layer_norm_epsilon",
		"hidden_act": "activation_function", "intermediate_size": "n_inner",
	},
	parse: gpt2Parse,
}

// gpt2Parse refuses the attention variants the forward pass does not have.
func gpt2Parse(p *configParser, _ *Config) {
	if !p.optBool("scale_attn_weights", true) {
		p.fail("scale_attn_weights", "false is not supported; expected true (scores scaled by head_dim^-0.5)")
	}
	if p.optBool("scale_attn_by_inverse_layer_idx", false) {
		p.fail("scale_attn_by_inverse_layer_idx", "true is not supported; expected false")
	}
}
