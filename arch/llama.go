package arch

// llama is Hugging Face's LlamaForCausalLM (Llama 2/3.x, SmolLM2, ...; transformers
// models/llama): no biases unless attention_bias (q, k, v, o) or mlp_bias (gate, up, down) say
// so, SwiGLU, and the "llama3" RoPE scaling of Llama 3.1 and later.
var llama = &Family{
	Architecture: "LlamaForCausalLM",
	Norm:         RMSNorm,
	MLP:          GatedMLP,
	Activations:  []string{ActSiLU},
	Bias:         BiasRules{QKV: BiasIfAttn, O: BiasIfAttn, MLP: BiasIfMLP},
	RopeTypes:    []string{RopeLlama3},
	DefaultEps:   1e-6,
	LayerPrefix:  decoderLayers,
	Names:        decoderNames,
}
