package arch

import (
	"fmt"
	"sort"
)

// Family is one model architecture, described as data. The forward pass every family shares is
// (names are slots, see Slot):
//
//	x = Embed[token]                                  (+ PosEmbed[pos] for learned positions)
//	per layer:
//	  h = AttnNorm(x)                                 (h = x with PostNormsOnly, and so for MLPNorm)
//	  q, k, v = Q·h, K·h, V·h                        (+ biases; one fused group, GroupQKV)
//	  q, k = QNorm(q), KNorm(k) per head              (when QKNorm)
//	  q, k = RoPE(q), RoPE(k)                         (the config's scaling and rotary share)
//	  a = causal grouped-query attention over the KV cache
//	  a = a * sigmoid(gate)                           (when AttnOutputGate: gate from Q·h)
//	  x = x + PostAttnNorm?(O·a)                      (GroupO)
//	  x = x + PostMLPNorm?(MLP(MLPNorm(x)))           (GroupMLP: Down·(act(Gate·h) * Up·h), or Down·act(Up·h);
//	                                                   on sparse layers the experts a router picks, see Experts)
//	logits = LMHead · FinalNorm(x)                    (LMHead is Embed when tied)
//
// Variants: LayerNorm with biases instead of RMSNorm, learned position embeddings instead of
// RoPE (x += PosEmbed[pos]), q | k | v as one fused weight, a plain MLP, the embedding scaled
// by sqrt(hidden), sliding-window attention on the layers config.json's layer_types names, and
// on the layers it names linear_attention a Gated DeltaNet in place of attention (the steps from
// q, k, v to O, see LinearAttention). A family says which of the optional parts it has and what
// its tensors are called.
type Family struct {
	// Architecture is the Hugging Face class name in config.json's "architectures".
	Architecture string
	// Norm is how every norm of the family computes.
	Norm NormKind
	// QKNorm adds a per-head norm of q and k before RoPE (QNorm and KNorm, [head_dim] each).
	QKNorm bool
	// QKNormWhole makes QKNorm's norms span the whole q and k projections (QNorm
	// [heads·head_dim], KNorm [kv_heads·head_dim]) instead of each head (OLMo 2 and 3).
	QKNormWhole bool
	// PostNorms adds norms on the attention and MLP outputs before the residual adds
	// (PostAttnNorm, PostMLPNorm).
	PostNorms bool
	// PostNormsOnly removes the norms before attention and the MLP (AttnNorm, MLPNorm): the
	// blocks read the residual stream itself, and PostNorms' norms are the layer's only ones
	// (OLMo 2 and 3).
	PostNormsOnly bool
	// MLP is the feed-forward block's shape.
	MLP MLPKind
	// Positions is how positions enter the model.
	Positions PositionKind
	// ScaleEmbedding multiplies the embedding by sqrt(hidden_size) (Gemma; the LM head reads
	// the unscaled weights).
	ScaleEmbedding bool
	// SlidingWindow enables sliding-window attention on the layers whose layer_types entry is
	// "sliding_attention" (Gemma 3), with their own RoPE base (rope_local_base_freq).
	SlidingWindow bool
	// LinearAttention enables Gated DeltaNet layers (Qwen3.5) where layer_types says
	// "linear_attention": per token, a fixed-size recurrent state replaces the KV cache:
	//
	//	q | k | v = silu(causal depthwise conv(LinQKV·h))   (GroupLinearIn with z, b, a)
	//	q, k = l2norm(q) / sqrt(key_dim), l2norm(k) per key head
	//	β = sigmoid(LinB·h), g = -exp(A_log) · softplus(LinA·h + dt_bias)
	//	S = S·e^g;  S += k ⊗ (v - Sᵀk)·β;  o = Sᵀq       per value head (S is key_dim x value_dim)
	//	a = RMSNorm(o; LinNorm) * silu(LinZ·h)             per value head
	//	x = x + LinOut·a                                    (GroupLinearOut)
	LinearAttention bool
	// Experts, when set, gives the family a sparse MLP block (a mixture of experts) on the
	// layers Config.SparseLayer names, in place of the MLP; the other layers keep the MLP.
	Experts *Experts
	// AttnOutputGate makes q_proj yield a gate per head after its query ([heads, 2·head_dim]);
	// the attention output is multiplied by sigmoid(gate) before o_proj (Qwen3.5).
	AttnOutputGate bool
	// TextConfig says config.json nests the language model's fields under "text_config" (a
	// multimodal checkpoint whose text model is what anepack packs); a field absent there is
	// read at the top level.
	TextConfig bool
	// Conv1D says the checkpoint stores every linear weight [in, out] (GPT-2's Conv1D); the
	// bundle holds the transposes, in the [out, in] layout of the CPU kernels and ANE blobs.
	Conv1D bool
	// IntermediateDefault, when not 0, is intermediate_size in multiples of hidden_size when
	// config.json has none (GPT-2's n_inner: null means 4 * n_embd).
	IntermediateDefault int
	// OptionalPrefix is a prefix of every tensor name that checkpoints may omit (GPT-2's
	// "transformer."; the Hub's openai-community/gpt2 has none, current saves have it).
	OptionalPrefix string
	// Ignore lists suffixes of checkpoint tensors that are not weights and are skipped without a
	// warning (GPT-2's attn.bias / attn.masked_bias buffers).
	Ignore []string
	// IgnorePrefixes lists prefixes of checkpoint tensors that belong to parts of the model a
	// text-only run never uses (a vision tower, a multi-token-prediction head), skipped without
	// a warning.
	IgnorePrefixes []string
	// Activations lists the accepted hidden_act values; the first is the default.
	Activations []string
	// Bias says which linear layers have a bias.
	Bias BiasRules
	// RopeTypes lists the rope scaling types the family accepts besides "default".
	RopeTypes []string
	// TieDefault is tie_word_embeddings when config.json does not say.
	TieDefault bool
	// DefaultEps is the norm epsilon when config.json does not say.
	DefaultEps float64
	// LayerPrefix starts every per-layer tensor name, followed by the layer index and a dot.
	LayerPrefix string
	// Names gives each slot's Hugging Face name: the whole name for model-level slots, the part
	// after "<LayerPrefix><layer>." for per-layer slots. A slot the family never has is absent.
	Names map[Slot]string
	// Spellings maps canonical config.json field names to this family's, where they differ.
	Spellings map[string]string
	// parse reads and checks family-specific config fields.
	parse func(p *configParser, c *Config)
}

// NormKind is how a norm computes, in float32 throughout.
type NormKind uint8

// Norm kinds.
const (
	// RMSNorm is x * rsqrt(mean(x²) + eps) * w.
	RMSNorm NormKind = iota + 1
	// RMSNormPlusOne is x * rsqrt(mean(x²) + eps) * (1 + w): zero-centred weights (Gemma, Qwen3.5).
	RMSNormPlusOne
	// LayerNorm is (x - mean(x)) / sqrt(var(x) + eps) * w + b, with a bias slot per norm (GPT-2).
	LayerNorm
)

// PositionKind is how positions enter the model.
type PositionKind uint8

// Position kinds.
const (
	// RotaryPositions rotates q and k (RoPE); the zero value.
	RotaryPositions PositionKind = iota
	// LearnedPositions adds a learned embedding row to the input (GPT-2).
	LearnedPositions
)

// MLPKind is the shape of the feed-forward block.
type MLPKind uint8

// MLP kinds.
const (
	// GatedMLP is Down · (act(Gate · h) * (Up · h)): SwiGLU with silu, GeGLU with gelu.
	GatedMLP MLPKind = iota + 1
	// PlainMLP is Down · act(Up · h) (GPT-2's c_fc and c_proj).
	PlainMLP
)

// Activations, as config.json spells them.
const (
	ActSiLU = "silu"
	// ActGeluTanh and ActGeluNew are both 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
	ActGeluTanh = "gelu_pytorch_tanh"
	ActGeluNew  = "gelu_new"
)

// Bias presence.
const (
	BiasNever  BiasRule = iota // no bias
	BiasAlways                 // always a bias
	BiasIfAttn                 // when config.json's attention_bias is true
	BiasIfMLP                  // when config.json's mlp_bias is true
)

// BiasRule says when a linear layer has a bias.
type BiasRule uint8

// BiasRules gives the rule of each group of linear layers.
type BiasRules struct {
	QKV, O, MLP BiasRule
}

func (r BiasRule) applies(c *Config) bool {
	switch r {
	case BiasAlways:
		return true
	case BiasIfAttn:
		return c.AttentionBias
	case BiasIfMLP:
		return c.MLPBias
	}
	return false
}

// Lookup returns the family of a config.
func Lookup(c *Config) (*Family, error) {
	f, ok := families[c.Architecture]
	if !ok {
		return nil, fmt.Errorf("architecture %q is not supported; supported: %s", c.Architecture, joinSupported())
	}
	return f, nil
}

// IsSupported reports whether name (a config's "architectures" entry, a manifest's
// model.architecture) is a supported architecture.
func IsSupported(name string) bool {
	_, ok := families[name]
	return ok
}

// Supported lists the supported architecture names, sorted.
func Supported() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func joinSupported() string {
	s := ""
	for i, n := range Supported() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
