package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Config is what anepack needs of a Hugging Face config.json, validated and with Hugging Face's
// defaults filled in. It is stored in every bundle's manifest (as JSON, field names below) and
// validated again when a bundle is opened.
type Config struct {
	Architecture          string  `json:"architecture"`
	ModelType             string  `json:"model_type"`
	HiddenSize            int     `json:"hidden_size"`
	IntermediateSize      int     `json:"intermediate_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKeyValueHeads      int     `json:"num_key_value_heads"`
	HeadDim               int     `json:"head_dim"`
	VocabSize             int     `json:"vocab_size"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	RMSNormEps            float64 `json:"rms_norm_eps"` // the epsilon of every norm, whatever its kind
	RopeTheta             float64 `json:"rope_theta"`
	// RopeScaling is the rotary embedding's frequency scaling; nil is the default (none).
	RopeScaling *RopeScaling `json:"rope_scaling,omitempty"`
	// PartialRotaryFactor is the share of each head's dimensions that RoPE rotates; 0 means all.
	PartialRotaryFactor float64 `json:"partial_rotary_factor,omitempty"`
	TieWordEmbeddings   bool    `json:"tie_word_embeddings"`
	HiddenAct           string  `json:"hidden_act"`
	// AttentionBias and MLPBias are Llama's switches for biases on the attention projections
	// and the MLP; families whose biases are fixed ignore them (see Family.Bias).
	AttentionBias bool `json:"attention_bias,omitempty"`
	MLPBias       bool `json:"mlp_bias,omitempty"`
	// LayerTypes names each layer's token mixer: "full_attention", "sliding_attention" or
	// "linear_attention" (a Gated DeltaNet); empty when every layer attends to the whole context.
	LayerTypes []string `json:"layer_types,omitempty"`
	// The Gated DeltaNet of the linear-attention layers (Qwen3.5): the causal convolution's
	// kernel size, and the key and value heads (value heads share key heads in groups of
	// LinearNumValueHeads / LinearNumKeyHeads). All 0 when no layer is a linear-attention layer.
	LinearConvKernelDim int `json:"linear_conv_kernel_dim,omitempty"`
	LinearKeyHeadDim    int `json:"linear_key_head_dim,omitempty"`
	LinearValueHeadDim  int `json:"linear_value_head_dim,omitempty"`
	LinearNumKeyHeads   int `json:"linear_num_key_heads,omitempty"`
	LinearNumValueHeads int `json:"linear_num_value_heads,omitempty"`
	// NoRopeLayers, when set, has one entry per layer: 1 where the layer rotates q and k, 0
	// where it attends without positions (SmolLM3's NoPE layers). Empty: every layer rotates.
	NoRopeLayers []int `json:"no_rope_layers,omitempty"`
	// SlidingWindow is how many positions (the current one included) a sliding layer attends to.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// RopeLocalTheta is the RoPE base of the sliding layers (Gemma 3's rope_local_base_freq).
	RopeLocalTheta float64 `json:"rope_local_base_freq,omitempty"`
	// QueryPreAttnScalar, when set, makes the attention scale QueryPreAttnScalar^-0.5 instead of
	// head_dim^-0.5 (Gemma).
	QueryPreAttnScalar float64 `json:"query_pre_attn_scalar,omitempty"`
	// The mixture of experts of the sparse layers (see Experts and SparseLayer): experts per
	// sparse layer, how many of them each token runs through, each expert's MLP width,
	// whether the chosen experts' weights are renormalised to sum to 1, and which layers are
	// sparse: every decoder_sparse_step-th layer except those mlp_only_layers lists (ascending),
	// which have the dense MLP of intermediate_size. All 0 (nil) in families without experts.
	NumExperts          int   `json:"num_experts,omitempty"`
	NumExpertsPerTok    int   `json:"num_experts_per_tok,omitempty"`
	MoEIntermediateSize int   `json:"moe_intermediate_size,omitempty"`
	NormTopKProb        bool  `json:"norm_topk_prob,omitempty"`
	DecoderSparseStep   int   `json:"decoder_sparse_step,omitempty"`
	MLPOnlyLayers       []int `json:"mlp_only_layers,omitempty"`
	// BOSTokenID is -1 when the config has none.
	BOSTokenID int `json:"bos_token_id"`
	// EOSTokenIDs lists every end-of-sequence id (config.json allows an int or a list).
	EOSTokenIDs []int `json:"eos_token_ids"`
}

// RopeScaling is a rotary embedding's frequency scaling (transformers' rope_scaling, or the
// non-default part of rope_parameters).
type RopeScaling struct {
	// Type is the scaling: "llama3" is the only one implemented (see Family.RopeTypes).
	Type string `json:"rope_type"`
	// Factor divides the low frequencies.
	Factor float64 `json:"factor"`
	// LowFreqFactor and HighFreqFactor bound the band of wavelengths that is interpolated.
	LowFreqFactor  float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor float64 `json:"high_freq_factor,omitempty"`
	// OriginalMaxPositionEmbeddings is the context the model was trained with before scaling.
	OriginalMaxPositionEmbeddings int `json:"original_max_position_embeddings,omitempty"`
}

// QDim returns the width of all query heads together (num_attention_heads * head_dim).
func (c *Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }

// KVDim returns the width of all key (or value) heads together.
func (c *Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// QProjDim returns the rows of q_proj: QDim, or twice that where the family's attention has an
// output gate (each head's query followed by its gate).
func (c *Config) QProjDim() int {
	if f := families[c.Architecture]; f != nil && f.AttnOutputGate {
		return 2 * c.QDim()
	}
	return c.QDim()
}

// QKNormDims returns the widths of the q and k norms: head_dim, or where the family norms
// whole projections (Family.QKNormWhole) QDim and KVDim.
func (c *Config) QKNormDims() [2]int {
	if f := families[c.Architecture]; f != nil && f.QKNormWhole {
		return [2]int{c.QDim(), c.KVDim()}
	}
	return [2]int{c.HeadDim, c.HeadDim}
}

// LinearConvDim returns the channels of a Gated DeltaNet's convolution: q | k | v.
func (c *Config) LinearConvDim() int {
	return 2*c.LinearNumKeyHeads*c.LinearKeyHeadDim + c.LinearValueDim()
}

// LinearValueDim returns the width of all Gated DeltaNet value heads together.
func (c *Config) LinearValueDim() int { return c.LinearNumValueHeads * c.LinearValueHeadDim }

// Layer types.
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
	LinearAttention  = "linear_attention"
)

// Sliding reports whether layer attends to a sliding window of SlidingWindow positions.
func (c *Config) Sliding(layer int) bool {
	return layer >= 0 && layer < len(c.LayerTypes) && c.LayerTypes[layer] == SlidingAttention
}

// RopeLayer reports whether layer rotates q and k (see NoRopeLayers).
func (c *Config) RopeLayer(layer int) bool {
	return layer < 0 || layer >= len(c.NoRopeLayers) || c.NoRopeLayers[layer] != 0
}

// LinearLayer reports whether layer is a linear-attention (Gated DeltaNet) layer.
func (c *Config) LinearLayer(layer int) bool {
	return layer >= 0 && layer < len(c.LayerTypes) && c.LayerTypes[layer] == LinearAttention
}

// AttentionScale returns the factor of the attention scores: query_pre_attn_scalar^-0.5 where
// the family uses it, else head_dim^-0.5.
func (c *Config) AttentionScale() float64 {
	if c.QueryPreAttnScalar > 0 {
		return 1 / math.Sqrt(c.QueryPreAttnScalar)
	}
	return 1 / math.Sqrt(float64(c.HeadDim))
}

// RotaryDim returns how many dimensions of each head RoPE rotates (an even number).
func (c *Config) RotaryDim() int {
	if c.PartialRotaryFactor == 0 || c.PartialRotaryFactor == 1 {
		return c.HeadDim
	}
	return int(float64(c.HeadDim)*c.PartialRotaryFactor) &^ 1
}

// ConfigError reports a config that cannot be used, naming the file and the field.
type ConfigError struct {
	File  string // the file name as the user gave it, e.g. "model/config.json"
	Field string // the JSON field, e.g. "num_key_value_heads"; empty for whole-file errors
	Msg   string // what was expected
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: field %q: %s", e.File, e.Field, e.Msg)
}

// ParseConfig reads a Hugging Face config.json. file is used only in error messages.
// It checks that the architecture is supported and that every field the family needs is present
// and consistent, in the family's own spelling, and fills Hugging Face's defaults (head_dim,
// tie_word_embeddings, rope parameters, ...).
func ParseConfig(data []byte, file string) (*Config, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, &ConfigError{File: file, Msg: "not a JSON object: " + err.Error()}
	}
	p := &configParser{file: file, raw: raw}
	archs := p.stringList("architectures")
	if p.err != nil {
		return nil, p.err
	}
	if len(archs) == 0 {
		return nil, &ConfigError{File: file, Field: "architectures", Msg: "missing; expected a list such as [\"Qwen2ForCausalLM\"]"}
	}
	fam, ok := families[archs[0]]
	if !ok {
		return nil, &ConfigError{File: file, Field: "architectures",
			Msg: fmt.Sprintf("%q is not supported; supported: %s", archs[0], strings.Join(Supported(), ", "))}
	}
	p.spell = fam.Spellings
	if fam.TextConfig {
		if err := p.nest("text_config"); err != nil {
			return nil, err
		}
	}
	c := &Config{Architecture: archs[0]}
	c.ModelType = p.optString("model_type", "")
	c.HiddenSize = p.positiveInt("hidden_size")
	if fam.IntermediateDefault > 0 {
		if c.IntermediateSize = p.optInt("intermediate_size", 0); c.IntermediateSize < 0 {
			p.fail("intermediate_size", "expected a positive integer, got %d", c.IntermediateSize)
		}
	} else {
		c.IntermediateSize = p.positiveInt("intermediate_size")
	}
	c.NumHiddenLayers = p.positiveInt("num_hidden_layers")
	c.NumAttentionHeads = p.positiveInt("num_attention_heads")
	c.NumKeyValueHeads = p.optPositiveInt("num_key_value_heads", c.NumAttentionHeads)
	c.VocabSize = p.positiveInt("vocab_size")
	c.MaxPositionEmbeddings = p.positiveInt("max_position_embeddings")
	c.RMSNormEps = p.positiveFloat("rms_norm_eps", fam.DefaultEps)
	c.TieWordEmbeddings = p.optBool("tie_word_embeddings", fam.TieDefault)
	c.HiddenAct = p.optString("hidden_act", fam.Activations[0])
	c.AttentionBias = p.optBool("attention_bias", false)
	c.MLPBias = p.optBool("mlp_bias", false)
	c.BOSTokenID = p.optInt("bos_token_id", -1)
	c.EOSTokenIDs = p.intOrList("eos_token_id")
	p.rope(c)
	if p.err != nil {
		return nil, p.err
	}
	if c.NumAttentionHeads > 0 && c.HiddenSize%c.NumAttentionHeads != 0 && !p.has("head_dim") {
		return nil, p.errorf("num_attention_heads", "hidden_size %d is not divisible by %d heads and head_dim is not given", c.HiddenSize, c.NumAttentionHeads)
	}
	c.HeadDim = p.optPositiveInt("head_dim", c.HiddenSize/max(c.NumAttentionHeads, 1))
	if c.IntermediateSize == 0 {
		c.IntermediateSize = fam.IntermediateDefault * c.HiddenSize
	}
	if fam.parse != nil {
		fam.parse(p, c)
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := Validate(c); err != nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.File, ce.Field = file, p.display(ce.Field)
		}
		return nil, err
	}
	return c, nil
}

// Limits on a config's sizes. No released model comes near them; they exist so that a damaged
// or hostile config (in a checkpoint, or in a downloaded bundle's manifest) is refused before
// anything is allocated from it, and so that products of sizes cannot overflow an int.
const (
	MaxLayers   = 1 << 12 // decoder layers
	MaxWidth    = 1 << 18 // hidden_size, intermediate_size, heads*head_dim
	MaxVocab    = 1 << 22 // vocab_size
	MaxHeads    = 1 << 12 // attention heads
	MaxPosition = 1 << 24 // max_position_embeddings
)

// Validate checks a config's internal consistency and its sizes against the limits above: what
// the forward pass divides by, allocates with or loops over. ParseConfig calls it; so does the
// runtime on the config stored in a bundle, which it must not trust. Errors are *ConfigError
// with File empty.
func Validate(c *Config) error {
	fam, ok := families[c.Architecture]
	if !ok {
		return &ConfigError{Field: "architectures", Msg: fmt.Sprintf("%q is not supported; supported: %s", c.Architecture, strings.Join(Supported(), ", "))}
	}
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"hidden_size", c.HiddenSize, MaxWidth}, {"intermediate_size", c.IntermediateSize, MaxWidth},
		{"num_hidden_layers", c.NumHiddenLayers, MaxLayers}, {"num_attention_heads", c.NumAttentionHeads, MaxHeads},
		{"num_key_value_heads", c.NumKeyValueHeads, MaxHeads}, {"head_dim", c.HeadDim, MaxWidth},
		{"vocab_size", c.VocabSize, MaxVocab}, {"max_position_embeddings", c.MaxPositionEmbeddings, MaxPosition},
	} {
		if f.v <= 0 || f.v > f.max {
			return bad(f.name, "%d is outside [1, %d]", f.v, f.max)
		}
	}
	switch {
	case c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return bad("num_key_value_heads", "%d must divide num_attention_heads (%d)", c.NumKeyValueHeads, c.NumAttentionHeads)
	case c.QProjDim() > MaxWidth:
		return bad("head_dim", "%d heads of %d exceed %d channels", c.NumAttentionHeads, c.HeadDim, MaxWidth)
	case c.QueryPreAttnScalar < 0 || c.QueryPreAttnScalar > 1e9:
		return bad("query_pre_attn_scalar", "%v; expected a positive number", c.QueryPreAttnScalar)
	case !(c.RMSNormEps > 0 && c.RMSNormEps < 1):
		return bad("rms_norm_eps", "%v; expected a small positive number", c.RMSNormEps)
	case !(c.RopeTheta > 0) || c.RopeTheta > 1e12:
		return bad("rope_theta", "%v; expected a positive number", c.RopeTheta)
	case c.PartialRotaryFactor < 0 || c.PartialRotaryFactor > 1:
		return bad("partial_rotary_factor", "%v; expected a number in (0, 1]", c.PartialRotaryFactor)
	case c.RotaryDim() <= 0 || c.RotaryDim()%2 != 0:
		return bad("head_dim", "%d (rotating %d of them) must give an even, positive rotary size", c.HeadDim, c.RotaryDim())
	case c.BOSTokenID >= c.VocabSize:
		return bad("bos_token_id", "%d is outside the vocabulary of %d", c.BOSTokenID, c.VocabSize)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || id >= c.VocabSize {
			return bad("eos_token_id", "%d is outside the vocabulary [0, %d)", id, c.VocabSize)
		}
	}
	if !contains(fam.Activations, c.HiddenAct) {
		return bad("hidden_act", "%q is not supported for %s; expected %s", c.HiddenAct, fam.Architecture, quoteList(fam.Activations))
	}
	if err := checkLayerTypes(fam, c); err != nil {
		return err
	}
	if err := checkNoRopeLayers(c); err != nil {
		return err
	}
	if err := checkLinearAttention(c); err != nil {
		return err
	}
	if err := checkExperts(fam, c); err != nil {
		return err
	}
	return checkRope(fam, c)
}

// checkLayerTypes checks the per-layer token mixers against the family and the layer count.
func checkLayerTypes(fam *Family, c *Config) error {
	if len(c.LayerTypes) == 0 {
		return nil
	}
	allowed := []string{FullAttention}
	if fam.SlidingWindow {
		allowed = append(allowed, SlidingAttention)
	}
	if fam.LinearAttention {
		allowed = append(allowed, LinearAttention)
	}
	if len(allowed) == 1 {
		return &ConfigError{Field: "layer_types", Msg: fmt.Sprintf("%s has no per-layer attention types", fam.Architecture)}
	}
	if len(c.LayerTypes) != c.NumHiddenLayers {
		return &ConfigError{Field: "layer_types", Msg: fmt.Sprintf("lists %d layers; num_hidden_layers is %d", len(c.LayerTypes), c.NumHiddenLayers)}
	}
	sliding := false
	for i, t := range c.LayerTypes {
		if !contains(allowed, t) {
			return &ConfigError{Field: "layer_types", Msg: fmt.Sprintf("layer %d is %q; expected %s", i, t, quoteList(allowed))}
		}
		sliding = sliding || t == SlidingAttention
	}
	switch {
	case sliding && (c.SlidingWindow <= 0 || c.SlidingWindow > MaxPosition):
		return &ConfigError{Field: "sliding_window", Msg: fmt.Sprintf("%d; sliding layers need a positive window", c.SlidingWindow)}
	case sliding && !(c.RopeLocalTheta > 0):
		return &ConfigError{Field: "rope_local_base_freq", Msg: fmt.Sprintf("%v; expected a positive number", c.RopeLocalTheta)}
	}
	return nil
}

// checkNoRopeLayers checks no_rope_layers: one 0 or 1 per layer.
func checkNoRopeLayers(c *Config) error {
	if len(c.NoRopeLayers) == 0 {
		return nil
	}
	if len(c.NoRopeLayers) != c.NumHiddenLayers {
		return &ConfigError{Field: "no_rope_layers", Msg: fmt.Sprintf("lists %d layers; num_hidden_layers is %d", len(c.NoRopeLayers), c.NumHiddenLayers)}
	}
	for i, v := range c.NoRopeLayers {
		if v != 0 && v != 1 {
			return &ConfigError{Field: "no_rope_layers", Msg: fmt.Sprintf("layer %d is %d; expected 1 (RoPE) or 0 (no RoPE)", i, v)}
		}
	}
	return nil
}

// Limits of a Gated DeltaNet: MaxConvKernel bounds linear_conv_kernel_dim (Qwen3.5 uses 4; the
// convolution keeps kernel-1 inputs of every channel per sequence), MaxLinearState the values
// of one layer's recurrent state, value_heads·key_dim·value_dim (Qwen3.5-2B: 2^18; 2^26 is
// 256 MiB per layer and sequence).
const (
	MaxConvKernel  = 64
	MaxLinearState = 1 << 26
)

// checkLinearAttention checks the Gated DeltaNet's sizes when some layer has one.
func checkLinearAttention(c *Config) error {
	linear := false
	for l := range c.LayerTypes {
		linear = linear || c.LinearLayer(l)
	}
	if !linear {
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"linear_conv_kernel_dim", c.LinearConvKernelDim, MaxConvKernel},
		{"linear_key_head_dim", c.LinearKeyHeadDim, MaxWidth}, {"linear_value_head_dim", c.LinearValueHeadDim, MaxWidth},
		{"linear_num_key_heads", c.LinearNumKeyHeads, MaxHeads}, {"linear_num_value_heads", c.LinearNumValueHeads, MaxHeads},
	} {
		if f.v <= 0 || f.v > f.max {
			return bad(f.name, "%d is outside [1, %d]", f.v, f.max)
		}
	}
	switch {
	case c.LinearNumValueHeads%c.LinearNumKeyHeads != 0:
		return bad("linear_num_value_heads", "%d is not a multiple of linear_num_key_heads (%d): each key head serves a whole group of value heads",
			c.LinearNumValueHeads, c.LinearNumKeyHeads)
	case c.LinearNumValueHeads*c.LinearKeyHeadDim*c.LinearValueHeadDim > MaxLinearState:
		return bad("linear_value_head_dim", "a recurrent state of %d value heads of %dx%d values exceeds %d values per layer",
			c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim, MaxLinearState)
	case c.LinearConvDim() > MaxWidth:
		return bad("linear_num_value_heads", "the convolution's %d channels (2·%d key heads of %d + %d value heads of %d) exceed %d",
			c.LinearConvDim(), c.LinearNumKeyHeads, c.LinearKeyHeadDim, c.LinearNumValueHeads, c.LinearValueHeadDim, MaxWidth)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " or ")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
