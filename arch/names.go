package arch

// decoderNames are the tensor names of the Llama lineage (Llama, Qwen2, Qwen3, Mistral, ...):
// every slot such a family may have. Has decides which of them a given config has.
var decoderNames = map[Slot]string{
	EmbedTokens: "model.embed_tokens.weight",
	FinalNorm:   "model.norm.weight",
	LMHead:      "lm_head.weight",
	InputNorm:   "input_layernorm.weight",
	QProj:       "self_attn.q_proj.weight",
	KProj:       "self_attn.k_proj.weight",
	VProj:       "self_attn.v_proj.weight",
	QBias:       "self_attn.q_proj.bias",
	KBias:       "self_attn.k_proj.bias",
	VBias:       "self_attn.v_proj.bias",
	QNorm:       "self_attn.q_norm.weight",
	KNorm:       "self_attn.k_norm.weight",
	OProj:       "self_attn.o_proj.weight",
	OBias:       "self_attn.o_proj.bias",
	// Qwen2's and Llama's post_attention_layernorm is the norm *before* the MLP.
	MLPNorm:  "post_attention_layernorm.weight",
	GateProj: "mlp.gate_proj.weight",
	UpProj:   "mlp.up_proj.weight",
	DownProj: "mlp.down_proj.weight",
	GateBias: "mlp.gate_proj.bias",
	UpBias:   "mlp.up_proj.bias",
	DownBias: "mlp.down_proj.bias",
}

// decoderLayers is the per-layer prefix of the Llama lineage.
const decoderLayers = "model.layers."

// noSlidingWindow refuses use_sliding_window: true, which these families' runtime does not do.
func noSlidingWindow(p *configParser, _ *Config) {
	if p.optBool("use_sliding_window", false) {
		p.fail("use_sliding_window", "sliding-window attention is not supported for this family; expected false")
	}
}
