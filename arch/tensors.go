package arch

import (
	"fmt"
	"strconv"
)

// Slot is a tensor's job in the forward pass (see Family), whatever a family calls it.
type Slot uint8

// Model-level slots.
const (
	SlotNone      Slot = iota
	EmbedTokens        // [vocab, hidden] token embedding (also the LM head when tied)
	PosEmbed           // [max_position_embeddings, hidden] learned position embedding
	FinalNorm          // [hidden] the norm before the LM head
	FinalNormBias      // [hidden] its bias (LayerNorm)
	LMHead             // [vocab, hidden] output projection of an untied model
	firstLayerSlot
)

// Per-layer slots.
const (
	InputNorm     Slot = iota + firstLayerSlot // [hidden] norm before attention
	InputNormBias                              // [hidden] its bias (LayerNorm)
	QKVProj                                    // [(heads+2*kv_heads)*head_dim, hidden] fused q | k | v
	QKVBias                                    // [(heads+2*kv_heads)*head_dim]
	QProj                                      // [heads*head_dim, hidden]
	KProj                                      // [kv_heads*head_dim, hidden]
	VProj                                      // [kv_heads*head_dim, hidden]
	QBias                                      // [heads*head_dim]
	KBias                                      // [kv_heads*head_dim]
	VBias                                      // [kv_heads*head_dim]
	QNorm                                      // [head_dim] per-head norm of q
	KNorm                                      // [head_dim] per-head norm of k
	OProj                                      // [hidden, heads*head_dim]
	OBias                                      // [hidden]
	PostAttnNorm                               // [hidden] norm of the attention output
	MLPNorm                                    // [hidden] norm before the MLP
	MLPNormBias                                // [hidden] its bias (LayerNorm)
	GateProj                                   // [intermediate, hidden]
	UpProj                                     // [intermediate, hidden]
	DownProj                                   // [hidden, intermediate]
	GateBias                                   // [intermediate]
	UpBias                                     // [intermediate]
	DownBias                                   // [hidden]
	PostMLPNorm                                // [hidden] norm of the MLP output
	// The Gated DeltaNet mixer of linear-attention layers (Qwen3.5; see linear.go). Widths:
	// conv = 2·key_heads·key_dim + value_heads·value_dim, value = value_heads·value_dim.
	LinQKVProj // [conv, hidden] in_proj_qkv: q | k | v before the convolution
	LinZProj   // [value, hidden] in_proj_z: the output gate
	LinBProj   // [value_heads, hidden] in_proj_b: the write strength β (after a sigmoid)
	LinAProj   // [value_heads, hidden] in_proj_a: the decay's input
	LinConv    // [conv, 1, kernel] conv1d.weight: the causal depthwise convolution
	LinDtBias  // [value_heads] dt_bias
	LinALog    // [value_heads] A_log
	LinNorm    // [value_dim] the gated RMSNorm of each head's output (plain weight, never 1 + w)
	LinOutProj // [hidden, value] out_proj
	// The sparse MLP block of the layers Config.SparseLayer names (a mixture of experts, see
	// Experts), in place of GateProj..DownBias. Expert e's matrix is rows [e·out, (e+1)·out) of
	// the [experts·out, in] rows of a stacked weight.
	Router       // [experts, hidden] the router's weight: each expert's logit
	ExpertGateUp // [experts, 2·moe_intermediate, hidden] each expert's gate_proj rows, then its up_proj rows
	ExpertDown   // [experts, hidden, moe_intermediate] each expert's down_proj
	slotCount
)

var slotNames = [...]string{
	EmbedTokens: "embed_tokens", PosEmbed: "pos_embed", FinalNorm: "final_norm", FinalNormBias: "final_norm_bias", LMHead: "lm_head",
	InputNorm: "input_norm", InputNormBias: "input_norm_bias", QKVProj: "qkv_proj", QKVBias: "qkv_bias", QProj: "q_proj", KProj: "k_proj", VProj: "v_proj",
	QBias: "q_bias", KBias: "k_bias", VBias: "v_bias", QNorm: "q_norm", KNorm: "k_norm",
	OProj: "o_proj", OBias: "o_bias", PostAttnNorm: "post_attn_norm", MLPNorm: "mlp_norm", MLPNormBias: "mlp_norm_bias",
	GateProj: "gate_proj", UpProj: "up_proj", DownProj: "down_proj",
	GateBias: "gate_bias", UpBias: "up_bias", DownBias: "down_bias", PostMLPNorm: "post_mlp_norm",
	LinQKVProj: "linear_qkv_proj", LinZProj: "linear_z_proj", LinBProj: "linear_b_proj", LinAProj: "linear_a_proj",
	LinConv: "linear_conv", LinDtBias: "linear_dt_bias", LinALog: "linear_a_log", LinNorm: "linear_norm",
	LinOutProj: "linear_out_proj", Router: "router", ExpertGateUp: "expert_gate_up", ExpertDown: "expert_down",
}

// String returns the slot's name, e.g. "q_proj".
func (s Slot) String() string {
	if int(s) < len(slotNames) && slotNames[s] != "" {
		return slotNames[s]
	}
	return fmt.Sprintf("Slot(%d)", uint8(s))
}

// PerLayer reports whether every decoder layer has its own tensor for the slot.
func (s Slot) PerLayer() bool { return s >= firstLayerSlot }

// Role says how a tensor is used, which decides its storage: linear weights go into ANE weight
// blobs that the CPU reads in place, in the bundle's dtype; embeddings are FP16; norms, biases
// and the other small parameters are F32.
type Role uint8

// Tensor roles.
const (
	RoleLinear    Role = iota + 1 // [out, in] weight of a linear layer (a 1x1 conv on the ANE)
	RoleEmbedding                 // [vocab, hidden] token embedding (also the LM head when tied)
	RoleLMHead                    // [vocab, hidden] separate output projection
	RoleNorm                      // [n] norm weight
	RoleBias                      // [out] bias of a linear layer
	// RoleParam is any other small parameter the decoder reads itself (the Gated DeltaNet's
	// conv1d kernel, A_log and dt_bias): F32, like norms, whatever the checkpoint stores.
	RoleParam
	// RoleRouter is a mixture of experts' router weight [experts, hidden]: F32 whatever the
	// bundle's type (never quantized), since which experts a token runs through must not move
	// with the weights' rounding. The decoder computes the router itself.
	RoleRouter
	// RoleExperts is a stacked expert weight [experts, out, in]: stored like linear weights (in
	// the bundle's type, quantized per row), as a matrix of experts·out rows.
	RoleExperts
)

func (r Role) String() string {
	switch r {
	case RoleLinear:
		return "linear"
	case RoleEmbedding:
		return "embedding"
	case RoleLMHead:
		return "lm_head"
	case RoleNorm:
		return "norm"
	case RoleBias:
		return "bias"
	case RoleParam:
		return "param"
	case RoleRouter:
		return "router"
	case RoleExperts:
		return "experts"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Role returns the role of the tensor in a slot.
func (s Slot) Role() Role {
	switch s {
	case EmbedTokens, PosEmbed:
		return RoleEmbedding
	case LMHead:
		return RoleLMHead
	case FinalNorm, InputNorm, QNorm, KNorm, PostAttnNorm, MLPNorm, PostMLPNorm, LinNorm:
		return RoleNorm
	case FinalNormBias, InputNormBias, MLPNormBias, QKVBias, QBias, KBias, VBias, OBias, GateBias, UpBias, DownBias:
		return RoleBias
	case LinConv, LinDtBias, LinALog:
		return RoleParam
	case Router:
		return RoleRouter
	case ExpertGateUp, ExpertDown:
		return RoleExperts
	}
	return RoleLinear
}

// Tensor describes one checkpoint tensor by its Hugging Face name.
type Tensor struct {
	Name  string // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
	Slot  Slot
	Shape []int // row-major; [out, in] for linear weights
	Role  Role
	Layer int // decoder layer index, or -1 for tensors outside the layers
	// Group names the fused group whose weight blob holds this linear weight (e.g. GroupQKV);
	// empty for tensors that are not linear weights of a layer.
	Group string
	// PlusOne marks a norm weight the forward pass uses as (1 + w): stored values are near 0.
	PlusOne bool
	// Transposed marks a linear weight the checkpoint stores [in, out] (GPT-2's Conv1D): its
	// checkpoint shape is Shape reversed, and the bundle holds the transpose.
	Transposed bool
	// Sources, when set, are the checkpoint tensors whose rows, in this order, form the tensor:
	// a stacked expert weight of a checkpoint that stores each expert's matrices apart
	// (Qwen3-MoE's mlp.experts.<e>.gate_proj.weight, ...). The checkpoint holds them and not
	// Name (see CheckpointTensors).
	Sources []Tensor
}

// Matrix returns the rows and columns of the tensor read as a matrix, as the bundle stores
// it: a stacked expert weight [experts, out, in] has experts·out rows of in values; any other
// tensor Shape[0] rows of the product of the rest.
func (t Tensor) Matrix() (rows, cols int) {
	if t.Role == RoleExperts && len(t.Shape) == 3 {
		return t.Shape[0] * t.Shape[1], t.Shape[2]
	}
	if len(t.Shape) == 0 {
		return 1, 1
	}
	return t.Shape[0], Elements(t.Shape[1:])
}

// CheckpointShape returns the tensor's shape as the checkpoint stores it.
func (t Tensor) CheckpointShape() []int {
	if !t.Transposed {
		return t.Shape
	}
	return []int{t.Shape[1], t.Shape[0]}
}

// Elements returns the number of elements of a shape.
func Elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Has reports whether models of config c have a tensor in slot s.
func (f *Family) Has(c *Config, s Slot) bool {
	if _, ok := f.Names[s]; !ok {
		return false
	}
	switch s {
	case InputNorm, InputNormBias, MLPNorm, MLPNormBias:
		if f.PostNormsOnly {
			return false
		}
	}
	switch s {
	case LMHead:
		return !c.TieWordEmbeddings
	case PosEmbed:
		return f.Positions == LearnedPositions
	case FinalNormBias, InputNormBias, MLPNormBias:
		return f.Norm == LayerNorm
	case QNorm, KNorm:
		return f.QKNorm
	case PostAttnNorm, PostMLPNorm:
		return f.PostNorms
	case QProj, KProj, VProj:
		return !f.fusedQKV()
	case QKVProj:
		return f.fusedQKV()
	case QBias, KBias, VBias:
		return !f.fusedQKV() && f.Bias.QKV.applies(c)
	case QKVBias:
		return f.Bias.QKV.applies(c)
	case GateProj:
		return f.MLP == GatedMLP
	case OBias:
		return f.Bias.O.applies(c)
	case GateBias:
		return f.MLP == GatedMLP && f.Bias.MLP.applies(c)
	case UpBias, DownBias:
		return f.Bias.MLP.applies(c)
	}
	if s.linearMixer() {
		return f.LinearAttention
	}
	if s.expertSlot() {
		return f.Experts != nil
	}
	return true
}

// HasIn reports whether layer of config c has a tensor in slot s: Has, and for the slots of a
// token mixer, whether the layer's mixer is that one (attention or Gated DeltaNet, by
// layer_types); for the slots of the MLP, whether the layer's MLP is dense or sparse (a
// mixture of experts, by Config.SparseLayer).
func (f *Family) HasIn(c *Config, s Slot, layer int) bool {
	if !f.Has(c, s) {
		return false
	}
	switch {
	case s.linearMixer():
		return c.LinearLayer(layer)
	case s.attentionMixer():
		return !c.LinearLayer(layer)
	case s.expertSlot():
		return c.SparseLayer(layer)
	case s.denseMLP():
		return !c.SparseLayer(layer)
	}
	return true
}

// attentionMixer reports whether s belongs to the attention block (absent from Gated DeltaNet
// layers).
func (s Slot) attentionMixer() bool { return s >= QKVProj && s <= OBias }

// linearMixer reports whether s belongs to the Gated DeltaNet block of linear-attention layers.
func (s Slot) linearMixer() bool { return s >= LinQKVProj && s <= LinOutProj }

// denseMLP reports whether s belongs to the dense MLP (absent from sparse layers).
func (s Slot) denseMLP() bool { return s >= GateProj && s <= DownBias }

// expertSlot reports whether s belongs to the sparse MLP block (present on sparse layers only).
func (s Slot) expertSlot() bool { return s >= Router && s <= ExpertDown }

// fusedQKV reports whether the family stores q, k and v as one fused weight (QKVProj).
func (f *Family) fusedQKV() bool {
	_, ok := f.Names[QKVProj]
	return ok
}

// TensorName returns the Hugging Face name of slot s (in layer, for per-layer slots).
func (f *Family) TensorName(s Slot, layer int) string {
	if s.PerLayer() {
		return f.LayerPrefix + strconv.Itoa(layer) + "." + f.Names[s]
	}
	return f.Names[s]
}

// Shape returns the shape of slot s's tensor under config c.
func Shape(c *Config, s Slot) []int {
	h, inter, q, kv := c.HiddenSize, c.IntermediateSize, c.QDim(), c.KVDim()
	// q_proj's rows: the queries, and with an output gate each head's gate after its query.
	qRows := c.QProjDim()
	switch s {
	case EmbedTokens, LMHead:
		return []int{c.VocabSize, h}
	case PosEmbed:
		return []int{c.MaxPositionEmbeddings, h}
	case FinalNorm, FinalNormBias, InputNorm, InputNormBias, PostAttnNorm, MLPNorm, MLPNormBias, PostMLPNorm, OBias, DownBias:
		return []int{h}
	case QKVProj:
		return []int{qRows + 2*kv, h}
	case QKVBias:
		return []int{qRows + 2*kv}
	case QProj:
		return []int{qRows, h}
	case KProj, VProj:
		return []int{kv, h}
	case QBias:
		return []int{qRows}
	case KBias, VBias:
		return []int{kv}
	case QNorm:
		return []int{c.QKNormDims()[0]}
	case KNorm:
		return []int{c.QKNormDims()[1]}
	case OProj:
		return []int{h, q}
	case GateProj, UpProj:
		return []int{inter, h}
	case DownProj:
		return []int{h, inter}
	case GateBias, UpBias:
		return []int{inter}
	case LinQKVProj:
		return []int{c.LinearConvDim(), h}
	case LinZProj:
		return []int{c.LinearValueDim(), h}
	case LinBProj, LinAProj:
		return []int{c.LinearNumValueHeads, h}
	case LinConv:
		return []int{c.LinearConvDim(), 1, c.LinearConvKernelDim}
	case LinDtBias, LinALog:
		return []int{c.LinearNumValueHeads}
	case LinNorm:
		return []int{c.LinearValueHeadDim}
	case LinOutProj:
		return []int{h, c.LinearValueDim()}
	case Router:
		return []int{c.NumExperts, h}
	case ExpertGateUp:
		return []int{c.NumExperts, 2 * c.MoEIntermediateSize, h}
	case ExpertDown:
		return []int{c.NumExperts, h, c.MoEIntermediateSize}
	}
	return nil
}

// layerOrder is the order of a layer's tensors in tensor lists and manifests.
var layerOrder = []Slot{InputNorm, InputNormBias, QKVProj, QKVBias, QProj, KProj, VProj, QBias, KBias, VBias,
	QNorm, KNorm, OProj, OBias, LinQKVProj, LinZProj, LinBProj, LinAProj, LinConv, LinDtBias, LinALog, LinNorm,
	LinOutProj, PostAttnNorm, MLPNorm, MLPNormBias, GateProj, UpProj, DownProj, GateBias, UpBias, DownBias,
	Router, ExpertGateUp, ExpertDown, PostMLPNorm}

// modelOrder is the order of the model-level tensors: those before the layers, then after.
var modelHead, modelTail = []Slot{EmbedTokens, PosEmbed}, []Slot{FinalNorm, FinalNormBias, LMHead}

// LayerSlots returns the slots layer of config c has, in tensor-list order (layers of one
// mixer kind have the same slots).
func (f *Family) LayerSlots(c *Config, layer int) []Slot {
	var out []Slot
	for _, s := range layerOrder {
		if f.HasIn(c, s, layer) {
			out = append(out, s)
		}
	}
	return out
}

// TensorCount returns how many tensors Tensors(c) lists, without building the list (so a config
// claiming a huge layer count can be refused before anything is allocated from it).
func (f *Family) TensorCount(c *Config) int {
	n := 0
	for l := 0; l < c.NumHiddenLayers; l++ {
		for _, s := range layerOrder {
			if f.HasIn(c, s, l) {
				n++
			}
		}
	}
	for _, s := range append(modelHead, modelTail...) {
		if f.Has(c, s) {
			n++
		}
	}
	return n
}

// Tensors lists every tensor a bundle of config c holds, in a stable order: the embeddings,
// each layer's tensors, the final norm, and the LM head when untied. A checkpoint holds the
// same tensors, except that it may store a stacked expert weight as its Sources
// (CheckpointTensors).
func (f *Family) Tensors(c *Config) []Tensor {
	out := make([]Tensor, 0, f.TensorCount(c))
	for _, s := range modelHead {
		if f.Has(c, s) {
			out = append(out, f.Tensor(c, s, -1))
		}
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		for _, s := range f.LayerSlots(c, l) {
			out = append(out, f.Tensor(c, s, l))
		}
	}
	for _, s := range modelTail {
		if f.Has(c, s) {
			out = append(out, f.Tensor(c, s, -1))
		}
	}
	return out
}

// CheckpointTensors lists every tensor a checkpoint of config c holds: Tensors, with each
// tensor that has Sources replaced by them.
func (f *Family) CheckpointTensors(c *Config) []Tensor {
	var out []Tensor
	for _, t := range f.Tensors(c) {
		if t.Sources != nil {
			out = append(out, t.Sources...)
		} else {
			out = append(out, t)
		}
	}
	return out
}

// Tensor describes the tensor in slot s of layer (-1 for the model-level slots) as Tensors
// lists it.
func (f *Family) Tensor(c *Config, s Slot, layer int) Tensor {
	// The DeltaNet's output norm keeps a plain weight in every family that has it.
	t := Tensor{Name: f.TensorName(s, layer), Slot: s, Shape: Shape(c, s), Role: s.Role(), Layer: layer,
		PlusOne: s.Role() == RoleNorm && f.Norm == RMSNormPlusOne && s != LinNorm}
	switch t.Role {
	case RoleLinear:
		t.Group = groupOf(s)
		t.Transposed = f.Conv1D
	case RoleExperts:
		t.Group = GroupExperts
		t.Sources = f.Experts.sources(f, c, s, layer)
	}
	return t
}
