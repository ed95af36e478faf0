package arch

// mistral is Hugging Face's MistralForCausalLM (Mistral 7B v0.1-v0.3, Mistral NeMo, Ministral's
// text model in its Mistral class; transformers models/mistral): Llama's layout without
// biases, and sliding-window attention on every layer when config.json's sliding_window is set
// (v0.1 uses 4096; v0.2 and later set null).
var mistral = &Family{
	Architecture:  "MistralForCausalLM",
	Norm:          RMSNorm,
	MLP:           GatedMLP,
	SlidingWindow: true,
	Activations:   []string{ActSiLU},
	DefaultEps:    1e-6,
	LayerPrefix:   decoderLayers,
	Names:         decoderNames,
	parse:         mistralParse,
}

// mistralParse makes every layer a sliding layer when sliding_window is set: transformers'
// MistralModel masks every layer with the same window and rotates them all with rope_theta.
func mistralParse(p *configParser, c *Config) {
	if !p.has("sliding_window") {
		return
	}
	c.SlidingWindow = p.optPositiveInt("sliding_window", 0)
	c.RopeLocalTheta = c.RopeTheta
	for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
		c.LayerTypes = append(c.LayerTypes, SlidingAttention)
	}
}
