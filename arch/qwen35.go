package arch

// qwen35 is Hugging Face's Qwen3_5ForCausalLM (transformers models/qwen3_5), the text model of
// Qwen3.5: a hybrid whose layers are Gated DeltaNet layers (linear attention with a fixed-size
// recurrent state) or gated full-attention layers, as layer_types says (by default every
// fourth layer attends). Every norm is zero-centred, x̂·(1+w), except the DeltaNet's output
// norm; attention has per-head q/k norms, an output gate interleaved with the queries in
// q_proj, and RoPE over the first partial_rotary_factor of each head.
var qwen35 = &Family{
	Architecture:    "Qwen3_5ForCausalLM",
	Norm:            RMSNormPlusOne,
	QKNorm:          true,
	MLP:             GatedMLP,
	LinearAttention: true,
	AttnOutputGate:  true,
	IgnorePrefixes:  []string{"mtp."}, // transformers skips the multi-token-prediction head too
	Activations:     []string{ActSiLU},
	Bias:            BiasRules{QKV: BiasIfAttn, O: BiasIfAttn},
	DefaultEps:      1e-6,
	LayerPrefix:     decoderLayers,
	Names:           withNames(decoderNames, linearAttnNames),
	parse:           qwen35Parse,
}

// qwen35VL is Qwen3_5ForConditionalGeneration, the class the Hub's Qwen3.5 checkpoints name:
// the same language model, its config under text_config and its tensors under
// model.language_model., next to a vision tower (model.visual.*) and a multi-token-prediction
// head (mtp.*) that text generation does not use.
var qwen35VL = &Family{
	Architecture:    "Qwen3_5ForConditionalGeneration",
	Norm:            RMSNormPlusOne,
	QKNorm:          true,
	MLP:             GatedMLP,
	LinearAttention: true,
	AttnOutputGate:  true,
	TextConfig:      true,
	IgnorePrefixes:  []string{"model.visual.", "mtp."},
	Activations:     []string{ActSiLU},
	Bias:            BiasRules{QKV: BiasIfAttn, O: BiasIfAttn},
	DefaultEps:      1e-6,
	LayerPrefix:     "model.language_model.layers.",
	Names: withNames(decoderNames, linearAttnNames, map[Slot]string{
		EmbedTokens: "model.language_model.embed_tokens.weight",
		FinalNorm:   "model.language_model.norm.weight",
	}),
	parse: qwen35Parse,
}

// linearAttnNames are the tensors of a Gated DeltaNet layer (Qwen3.5, Qwen3-Next's layout
// without the fused in_proj_qkvz).
var linearAttnNames = map[Slot]string{
	LinQKVProj: "linear_attn.in_proj_qkv.weight",
	LinZProj:   "linear_attn.in_proj_z.weight",
	LinBProj:   "linear_attn.in_proj_b.weight",
	LinAProj:   "linear_attn.in_proj_a.weight",
	LinConv:    "linear_attn.conv1d.weight",
	LinDtBias:  "linear_attn.dt_bias",
	LinALog:    "linear_attn.A_log",
	LinNorm:    "linear_attn.norm.weight",
	LinOutProj: "linear_attn.out_proj.weight",
}

// qwen35Parse reads the layer types (layer_types, or full_attention_interval: layer i attends
// iff (i+1) % interval == 0) and the Gated DeltaNet's sizes, with transformers' defaults, and
// defaults the rotary share to a quarter of each head. The rope parameters' mrope_section
// splits the rotary frequencies between the three position rows of images and video; for
// text every row is the token's position, which makes it the plain 1-D rotation.
func qwen35Parse(p *configParser, c *Config) {
	c.LayerTypes = p.stringList("layer_types")
	if c.LayerTypes == nil && p.err == nil {
		interval := p.optPositiveInt("full_attention_interval", 4)
		for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
			t := LinearAttention
			if (i+1)%interval == 0 {
				t = FullAttention
			}
			c.LayerTypes = append(c.LayerTypes, t)
		}
	}
	c.LinearConvKernelDim = p.optPositiveInt("linear_conv_kernel_dim", 4)
	c.LinearKeyHeadDim = p.optPositiveInt("linear_key_head_dim", 128)
	c.LinearValueHeadDim = p.optPositiveInt("linear_value_head_dim", 128)
	c.LinearNumKeyHeads = p.optPositiveInt("linear_num_key_heads", 16)
	c.LinearNumValueHeads = p.optPositiveInt("linear_num_value_heads", 32)
	if c.PartialRotaryFactor == 0 && !p.has("partial_rotary_factor") && p.object("rope_parameters")["partial_rotary_factor"] == nil {
		c.PartialRotaryFactor = 0.25 // Qwen3_5TextConfig's default
	}
}
