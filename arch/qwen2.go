package arch

// qwen2 is Hugging Face's Qwen2ForCausalLM (Qwen2, Qwen2.5; transformers models/qwen2): RMSNorm,
// biases on q, k and v (not o), SwiGLU, default RoPE.
var qwen2 = &Family{
	Architecture: "Qwen2ForCausalLM",
	Norm:         RMSNorm,
	MLP:          GatedMLP,
	Activations:  []string{ActSiLU},
	Bias:         BiasRules{QKV: BiasAlways},
	DefaultEps:   1e-6,
	LayerPrefix:  decoderLayers,
	Names:        decoderNames,
	parse:        noSlidingWindow,
}
