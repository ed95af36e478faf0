package arch

import (
	"fmt"
	"sort"
)

// Role says how a tensor is used, which decides its storage: linear weights go into ANE weight
// blobs (FP16, or F32 with --dtype f32) that the CPU reads in place; embeddings are FP16; norms and
// biases are F32.
type Role uint8

// Tensor roles.
const (
	RoleLinear    Role = iota + 1 // [out, in] weight of a linear layer (a 1x1 conv on the ANE)
	RoleEmbedding                 // [vocab, hidden] token embedding (also the LM head when tied)
	RoleLMHead                    // [vocab, hidden] separate output projection
	RoleNorm                      // [n] RMSNorm weight
	RoleBias                      // [out] bias of a linear layer
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
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Tensor describes one checkpoint tensor by its Hugging Face name.
type Tensor struct {
	Name  string // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
	Shape []int  // row-major; [out, in] for linear weights
	Role  Role
	Layer int // decoder layer index, or -1 for tensors outside the layers
	// Group names the fused ANE kernel whose weight blob holds this linear weight (e.g. GroupQKV);
	// the members of a group share one blob file, in the order the family lists them. Empty for
	// tensors that are not linear weights.
	Group string
}

// Fused weight groups. A group is one ANE kernel and one BLOBFILE with a record per member.
const (
	GroupQKV = "attn_qkv" // q_proj, k_proj, v_proj: one input, three outputs concatenated
	GroupO   = "attn_o"   // o_proj
	GroupMLP = "mlp"      // gate_proj, up_proj, down_proj: the whole SwiGLU FFN
)

// Elements returns the number of elements of a shape.
func Elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Family is one model architecture: how to check its config and which tensors it has.
type Family struct {
	// Architecture is the Hugging Face class name in config.json's "architectures".
	Architecture string
	// Tensors lists every tensor a checkpoint of this family holds, in a stable order.
	Tensors func(c *Config) []Tensor
	// check validates family-specific config fields.
	check func(c *Config, p *configParser) error
}

// Check validates the family-specific parts of a parsed config.
func (f *Family) Check(c *Config, p *configParser) error {
	if f.check == nil {
		return nil
	}
	return f.check(c, p)
}

// Lookup returns the family of a parsed config.
func Lookup(c *Config) (*Family, error) {
	f, ok := Families[c.Architecture]
	if !ok {
		return nil, fmt.Errorf("architecture %q is not supported", c.Architecture)
	}
	return f, nil
}

// Supported lists the supported architecture names, sorted.
func Supported() []string {
	names := make([]string, 0, len(Families))
	for n := range Families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LayerTensor returns the name of a per-layer tensor, e.g. LayerTensor(3, "mlp.up_proj.weight").
func LayerTensor(layer int, suffix string) string {
	return fmt.Sprintf("model.layers.%d.%s", layer, suffix)
}
