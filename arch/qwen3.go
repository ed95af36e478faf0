package arch

// qwen3 is Hugging Face's Qwen3ForCausalLM (transformers models/qwen3): Qwen2 without the q/k/v
// biases (attention_bias switches them on for q, k, v and o), plus a per-head RMSNorm of q and k
// before RoPE; head_dim is given explicitly and need not be hidden_size/heads.
var qwen3 = &Family{
	Architecture: "Qwen3ForCausalLM",
	Norm:         RMSNorm,
	QKNorm:       true,
	MLP:          GatedMLP,
	Activations:  []string{ActSiLU},
	Bias:         BiasRules{QKV: BiasIfAttn, O: BiasIfAttn},
	DefaultEps:   1e-6,
	LayerPrefix:  decoderLayers,
	Names:        decoderNames,
	parse:        noSlidingWindow,
}
