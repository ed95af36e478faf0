package arch

// smollm3 is Hugging Face's SmolLM3ForCausalLM (transformers models/smollm3): Llama's layout
// (attention_bias and mlp_bias switch the biases on) with RoPE skipped on the layers whose
// no_rope_layers entry is 0 (by default every no_rope_layer_interval-th layer, counting from
// 1), and sliding-window attention on the layers layer_types names, rotated like the others.
var smollm3 = &Family{
	Architecture:  "SmolLM3ForCausalLM",
	Norm:          RMSNorm,
	MLP:           GatedMLP,
	SlidingWindow: true,
	Activations:   []string{ActSiLU},
	Bias:          BiasRules{QKV: BiasIfAttn, O: BiasIfAttn, MLP: BiasIfMLP},
	DefaultEps:    1e-6,
	LayerPrefix:   decoderLayers,
	Names:         decoderNames,
	parse:         smollm3Parse,
}

// smollm3Parse reads no_rope_layers (1: the layer rotates q and k, 0: it does not), or derives
// it from no_rope_layer_interval as SmolLM3Config does, and the sliding layers: layer_types,
// or, when use_sliding_window is true, every layer (SmolLM3Config's default).
func smollm3Parse(p *configParser, c *Config) {
	c.NoRopeLayers = p.intList("no_rope_layers")
	if c.NoRopeLayers == nil && p.err == nil {
		interval := p.optPositiveInt("no_rope_layer_interval", 4)
		for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
			use := 1
			if (i+1)%interval == 0 {
				use = 0
			}
			c.NoRopeLayers = append(c.NoRopeLayers, use)
		}
	}
	c.LayerTypes = p.stringList("layer_types")
	sliding := p.optBool("use_sliding_window", false)
	if c.LayerTypes == nil && sliding {
		for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
			c.LayerTypes = append(c.LayerTypes, SlidingAttention)
		}
	}
	if p.has("sliding_window") {
		c.SlidingWindow = p.optPositiveInt("sliding_window", 0)
	}
	c.RopeLocalTheta = c.RopeTheta
	if !contains(c.LayerTypes, SlidingAttention) {
		// Only sliding layers use a window and a local base: a config without them stores none.
		c.SlidingWindow, c.RopeLocalTheta = 0, 0
	}
}
