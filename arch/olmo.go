package arch

import "encoding/json"

// olmo2 is Hugging Face's Olmo2ForCausalLM (transformers models/olmo2): no norm before
// attention or the MLP; instead each block's output is normed before the residual add
// (post_attention_layernorm, post_feedforward_layernorm), and q and k are each normed over
// the whole projection, all heads together, before RoPE. No biases, SwiGLU.
var olmo2 = &Family{
	Architecture:  "Olmo2ForCausalLM",
	Norm:          RMSNorm,
	QKNorm:        true,
	QKNormWhole:   true,
	PostNorms:     true,
	PostNormsOnly: true,
	MLP:           GatedMLP,
	Activations:   []string{ActSiLU},
	DefaultEps:    1e-5,
	LayerPrefix:   decoderLayers,
	Names:         olmoNames,
}

// olmo3 is Hugging Face's Olmo3ForCausalLM (transformers models/olmo3): OLMo 2's layers, with
// sliding-window attention on the layers layer_types names (by default three of every four).
var olmo3 = &Family{
	Architecture:  "Olmo3ForCausalLM",
	Norm:          RMSNorm,
	QKNorm:        true,
	QKNormWhole:   true,
	PostNorms:     true,
	PostNormsOnly: true,
	MLP:           GatedMLP,
	SlidingWindow: true,
	Activations:   []string{ActSiLU},
	DefaultEps:    1e-6,
	LayerPrefix:   decoderLayers,
	Names:         olmoNames,
	parse:         olmo3Parse,
}

// olmoNames are OLMo 2's and 3's tensors: the Llama lineage's without the pre-norms, whose
// post_attention_layernorm is the norm of the attention output.
var olmoNames = func() map[Slot]string {
	n := withNames(decoderNames, map[Slot]string{
		PostAttnNorm: "post_attention_layernorm.weight",
		PostMLPNorm:  "post_feedforward_layernorm.weight",
	})
	delete(n, InputNorm)
	delete(n, MLPNorm)
	return n
}()

// olmo3Parse reads the sliding layers (layer_types, or Olmo3Config's default: every fourth
// layer attends to the whole context, the others to sliding_window positions) and, in
// transformers 5's spelling, one set of rope parameters per layer type.
func olmo3Parse(p *configParser, c *Config) {
	c.SlidingWindow = p.optPositiveInt("sliding_window", 4096)
	c.RopeLocalTheta = c.RopeTheta
	if c.LayerTypes = p.stringList("layer_types"); c.LayerTypes == nil && p.err == nil {
		for i := 0; i < c.NumHiddenLayers && i < MaxLayers; i++ {
			t := SlidingAttention
			if (i+1)%4 == 0 {
				t = FullAttention
			}
			c.LayerTypes = append(c.LayerTypes, t)
		}
	}
	perTypeRope(p, c)
}

// perTypeRope reads rope_parameters keyed by layer type ({"sliding_attention": {...},
// "full_attention": {...}}): each type's rope_theta (RopeLocalTheta, RopeTheta); a scaling
// other than "default" is refused, for it is not implemented for these families. The flat
// spelling is the common parser's.
func perTypeRope(p *configParser, c *Config) {
	raw, ok := p.value("rope_parameters")
	if !ok || p.err != nil {
		return
	}
	var perType map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &perType) != nil || perType[FullAttention] == nil {
		return
	}
	for _, t := range []string{SlidingAttention, FullAttention} {
		params := perType[t]
		if params == nil {
			continue
		}
		field := "rope_parameters." + t
		var kind string
		if r, ok := params["rope_type"]; ok && json.Unmarshal(r, &kind) != nil {
			p.fail(field+".rope_type", "expected a string, got %s", r)
			return
		}
		if kind != "" && kind != RopeDefault {
			p.fail(field+".rope_type", "%q is not supported for %s; expected %q", kind, c.Architecture, RopeDefault)
			return
		}
		theta := c.RopeTheta
		if r, ok := params["rope_theta"]; ok {
			theta, _ = p.numberOf(field+".rope_theta", r)
		}
		if t == SlidingAttention {
			c.RopeLocalTheta = theta
		} else {
			c.RopeTheta = theta
		}
	}
}
