package arch

import "encoding/json"

// gemma3 is Hugging Face's Gemma3ForCausalLM, the text model (transformers models/gemma3):
// zero-centred RMSNorm x·(1+w) everywhere, four norms per layer (input, post-attention,
// pre-feedforward, post-feedforward), per-head q/k norms, the embedding scaled by
// sqrt(hidden_size), a GeGLU MLP with gelu_pytorch_tanh, attention scaled by
// query_pre_attn_scalar^-0.5, and sliding-window attention on the layers layer_types names
// (RoPE base rope_local_base_freq there; the global layers use rope_theta and rope_scaling).
var gemma3 = &Family{
	Architecture:   "Gemma3ForCausalLM",
	Norm:           RMSNormPlusOne,
	QKNorm:         true,
	PostNorms:      true,
	MLP:            GatedMLP,
	ScaleEmbedding: true,
	SlidingWindow:  true,
	Activations:    []string{ActGeluTanh},
	Bias:           BiasRules{QKV: BiasIfAttn, O: BiasIfAttn},
	RopeTypes:      []string{RopeLinear},
	TieDefault:     true,
	DefaultEps:     1e-6,
	LayerPrefix:    decoderLayers,
	Names: withNames(decoderNames, map[Slot]string{
		PostAttnNorm: "post_attention_layernorm.weight",
		MLPNorm:      "pre_feedforward_layernorm.weight",
		PostMLPNorm:  "post_feedforward_layernorm.weight",
	}),
	Spellings: map[string]string{"hidden_act": "hidden_activation"},
	parse:     gemma3Parse,
}

// gemma3Parse reads the attention fields: query_pre_attn_scalar, sliding_window, the layer types
// (layer_types, or the older sliding_window_pattern: every Nth layer global) and the local RoPE
// base, in either spelling of the rope parameters; it refuses logit soft-capping (Gemma 2).
func gemma3Parse(p *configParser, c *Config) {
	for _, f := range []string{"attn_logit_softcapping", "final_logit_softcapping"} {
		if p.has(f) {
			p.fail(f, "soft-capping is not supported; expected null (as Gemma 3 sets it)")
			return
		}
	}
	c.QueryPreAttnScalar = p.positiveFloat("query_pre_attn_scalar", 256)
	c.SlidingWindow = p.optPositiveInt("sliding_window", 4096)
	c.RopeLocalTheta = p.positiveFloat("rope_local_base_freq", 10000)
	if c.LayerTypes = p.stringList("layer_types"); c.LayerTypes == nil && p.err == nil {
		pattern := p.optPositiveInt("sliding_window_pattern", 6)
		for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
			t := SlidingAttention
			if (i+1)%pattern == 0 {
				t = FullAttention
			}
			c.LayerTypes = append(c.LayerTypes, t)
		}
	}
	// transformers 5 keeps one set of rope parameters per layer type.
	raw, ok := p.value("rope_parameters")
	if !ok || p.err != nil {
		return
	}
	var perType map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &perType) != nil || perType[SlidingAttention] == nil {
		return // the flat spelling, read by the common parser
	}
	if theta, ok := perType[SlidingAttention]["rope_theta"]; ok {
		c.RopeLocalTheta, _ = p.numberOf("rope_parameters.sliding_attention.rope_theta", theta)
	}
	full := perType[FullAttention]
	if theta, ok := full["rope_theta"]; ok {
		c.RopeTheta, _ = p.numberOf("rope_parameters.full_attention.rope_theta", theta)
	}
	var kind string
	_ = json.Unmarshal(full["rope_type"], &kind)
	if kind == RopeLinear {
		f, _ := p.numberOf("rope_parameters.full_attention.factor", full["factor"])
		c.RopeScaling = &RopeScaling{Type: RopeLinear, Factor: f}
	} else if kind != "" && kind != RopeDefault {
		c.RopeScaling = &RopeScaling{Type: kind}
	}
}

// withNames returns base with each extra map's entries added or replaced, in order.
func withNames(base map[Slot]string, extra ...map[Slot]string) map[Slot]string {
	out := make(map[Slot]string, len(base))
	for k, v := range base {
		out[k] = v
	}
	for _, e := range extra {
		for k, v := range e {
			out[k] = v
		}
	}
	return out
}
