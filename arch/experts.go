package arch

import (
	"fmt"
	"slices"
	"strconv"
)

// Experts describes a family's sparse MLP block, a mixture of experts, which replaces the MLP
// on the layers Config.SparseLayer names. With h the MLP norm's output (float32 throughout):
//
//	p = Router · h                                     [num_experts] logits (RoleRouter: F32)
//	e, w = Routing(p)                                  the num_experts_per_tok chosen experts, their weights
//	y = Σ_j w_j · Down_ej · (act(Gate_ej · h) * Up_ej · h)   (GroupExperts: ExpertGateUp, ExpertDown)
//
// The bundle stores each sparse layer's experts stacked ([experts, out, in], one blob per
// layer), so that one expert's rows are contiguous and a token reads only its experts'.
//
// The variants of the families to come are further fields here, each read by the decoder's
// sparse block (runtime's experts.go): a shared expert, a dense MLP of its own added to the
// routed sum, scaled by sigmoid(SharedGate · h) in Qwen3.5-MoE and unscaled in Granite 4.0-H
// (its slots next to Router: SharedGateUp, SharedDown, SharedGate); a router bias added to p
// and the top-k taken before the softmax (gpt-oss: a second Routing kind); biased experts whose
// SwiGLU clamps its inputs (gpt-oss's swiglu_limit: biases as slots beside the stacked
// weights, the activation as a field).
type Experts struct {
	// Routing is how the router's logits choose the experts and weigh them.
	Routing Routing
	// PerExpert, for a checkpoint that stores each expert's matrices apart, gives for each
	// stacked slot the names (after "<LayerPrefix><layer>.", with %d for the expert's index)
	// of the tensors whose rows form one expert's share of it, in order: Qwen3-MoE's
	// ExpertGateUp is mlp.experts.%d.gate_proj.weight then mlp.experts.%d.up_proj.weight.
	PerExpert map[Slot][]string
}

// Routing is how a router's logits choose the experts of a token and weigh them.
type Routing uint8

// Routing kinds.
const (
	// SoftmaxTopK is the softmax over every expert's logit, then the num_experts_per_tok largest
	// probabilities, renormalised to sum to 1 when norm_topk_prob is set (Qwen3-MoE,
	// Qwen3.5-MoE; ties go to the lower expert index).
	SoftmaxTopK Routing = iota + 1
)

// Limits on a mixture of experts: MaxExperts bounds num_experts (Qwen3-Next has 512),
// MaxExpertMatrices the expert matrices of a whole model, sparse layers times experts
// (Qwen3-30B-A3B: 48 × 128 = 6144), so that a config cannot make the tensor list huge.
const (
	MaxExperts        = 1 << 12
	MaxExpertMatrices = 1 << 20
)

// SparseLayer reports whether layer has the sparse MLP block (a mixture of experts) instead of
// the dense MLP: as Hugging Face's Qwen3-MoE decides it, every decoder_sparse_step-th layer
// (layer+1 a multiple of it) unless mlp_only_layers lists it, in a model with experts.
func (c *Config) SparseLayer(layer int) bool {
	if c.NumExperts <= 0 || c.DecoderSparseStep <= 0 || layer < 0 || layer >= c.NumHiddenLayers {
		return false
	}
	if (layer+1)%c.DecoderSparseStep != 0 {
		return false
	}
	_, listed := slices.BinarySearch(c.MLPOnlyLayers, layer) // ascending: parseExperts sorts it, Validate checks it
	return !listed
}

// parseExperts reads the mixture of experts' fields with Hugging Face's Qwen3MoeConfig
// defaults. The number of experts is num_experts (the Hub's checkpoints) or num_local_experts
// (what transformers 5 writes); mlp_only_layers is kept ascending and without repeats.
func parseExperts(p *configParser, c *Config) {
	if p.has("num_local_experts") {
		if p.has("num_experts") {
			a, b := p.int("num_experts", false, 0), p.int("num_local_experts", false, 0)
			if p.err == nil && a != b {
				p.fail("num_local_experts", "is %d and num_experts is %d; expected one number of experts", b, a)
				return
			}
		} else {
			p.respell("num_experts", "num_local_experts")
		}
	}
	c.NumExperts = p.optPositiveInt("num_experts", 128)
	c.NumExpertsPerTok = p.optPositiveInt("num_experts_per_tok", 8)
	c.MoEIntermediateSize = p.optPositiveInt("moe_intermediate_size", 768)
	c.NormTopKProb = p.optBool("norm_topk_prob", false)
	c.DecoderSparseStep = p.optPositiveInt("decoder_sparse_step", 1)
	layers := p.intList("mlp_only_layers")
	slices.Sort(layers)
	c.MLPOnlyLayers = slices.Compact(layers)
}

// checkExperts checks the mixture of experts' fields against the family and the layer count.
func checkExperts(fam *Family, c *Config) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if fam.Experts == nil {
		if c.NumExperts != 0 || c.NumExpertsPerTok != 0 || c.MoEIntermediateSize != 0 || c.DecoderSparseStep != 0 || len(c.MLPOnlyLayers) != 0 {
			return bad("num_experts", "%s has no experts; expected no mixture-of-experts fields", fam.Architecture)
		}
		return nil
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"num_experts", c.NumExperts, MaxExperts}, {"num_experts_per_tok", c.NumExpertsPerTok, MaxExperts},
		{"moe_intermediate_size", c.MoEIntermediateSize, MaxWidth}, {"decoder_sparse_step", c.DecoderSparseStep, MaxLayers},
	} {
		if f.v <= 0 || f.v > f.max {
			return bad(f.name, "%d is outside [1, %d]", f.v, f.max)
		}
	}
	if c.NumExpertsPerTok > c.NumExperts {
		return bad("num_experts_per_tok", "%d exceeds num_experts (%d): each token runs through that many distinct experts", c.NumExpertsPerTok, c.NumExperts)
	}
	for i, l := range c.MLPOnlyLayers {
		if l < 0 || l >= c.NumHiddenLayers {
			return bad("mlp_only_layers", "names layer %d; the model has layers 0 to %d", l, c.NumHiddenLayers-1)
		}
		if i > 0 && l <= c.MLPOnlyLayers[i-1] {
			return bad("mlp_only_layers", "%v; expected ascending layer indices without repeats", c.MLPOnlyLayers)
		}
	}
	if sparse := c.NumHiddenLayers / c.DecoderSparseStep; sparse*c.NumExperts > MaxExpertMatrices {
		return bad("num_experts", "%d experts in each of up to %d sparse layers exceed %d expert matrices", c.NumExperts, sparse, MaxExpertMatrices)
	}
	return nil
}

// sources returns the checkpoint tensors of stacked slot s in layer, per expert in order, or
// nil when the checkpoint stores the stacked tensor itself.
func (x *Experts) sources(f *Family, c *Config, s Slot, layer int) []Tensor {
	names := x.PerExpert[s]
	if len(names) == 0 {
		return nil
	}
	shape := Shape(c, s)
	rows := shape[1] / len(names) // ExpertGateUp: gate_proj's rows, then up_proj's
	prefix := f.LayerPrefix + strconv.Itoa(layer) + "."
	out := make([]Tensor, 0, c.NumExperts*len(names))
	for e := 0; e < c.NumExperts; e++ {
		for _, n := range names {
			out = append(out, Tensor{Name: prefix + fmt.Sprintf(n, e), Slot: s, Shape: []int{rows, shape[2]},
				Role: RoleLinear, Layer: layer, Group: GroupExperts})
		}
	}
	return out
}
