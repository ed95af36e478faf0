package arch

// qwen3MoE is Hugging Face's Qwen3MoeForCausalLM (transformers models/qwen3_moe): Qwen3's
// attention (per-head q/k norms, no biases) with a mixture of experts in place of the MLP on
// the sparse layers: a softmax router over num_experts experts, the num_experts_per_tok most
// probable ones (renormalised when norm_topk_prob), each a SwiGLU MLP of
// moe_intermediate_size. Layers in mlp_only_layers, or off the decoder_sparse_step grid, keep a
// dense SwiGLU MLP of intermediate_size. Checkpoints store each expert's matrices apart, as
// mlp.experts.<e>.{gate,up,down}_proj.weight; the bundle stacks them per layer under
// transformers 5's own names, mlp.experts.gate_up_proj and mlp.experts.down_proj.
var qwen3MoE = &Family{
	Architecture: "Qwen3MoeForCausalLM",
	Norm:         RMSNorm,
	QKNorm:       true,
	MLP:          GatedMLP,
	Experts: &Experts{
		Routing: SoftmaxTopK,
		PerExpert: map[Slot][]string{
			ExpertGateUp: {"mlp.experts.%d.gate_proj.weight", "mlp.experts.%d.up_proj.weight"},
			ExpertDown:   {"mlp.experts.%d.down_proj.weight"},
		},
	},
	Activations: []string{ActSiLU},
	Bias:        BiasRules{QKV: BiasIfAttn, O: BiasIfAttn},
	DefaultEps:  1e-6,
	LayerPrefix: decoderLayers,
	Names: withNames(decoderNames, map[Slot]string{
		Router:       "mlp.gate.weight",
		ExpertGateUp: "mlp.experts.gate_up_proj",
		ExpertDown:   "mlp.experts.down_proj",
	}),
	parse: func(p *configParser, c *Config) {
		noSlidingWindow(p, c)
		parseExperts(p, c)
	},
}
