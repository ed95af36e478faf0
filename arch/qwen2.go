package arch

import (
	"encoding/json"
	"fmt"
)

// qwen2 is Hugging Face's Qwen2ForCausalLM (transformers models/qwen2/modeling_qwen2.py):
// pre-norm decoder layers with RMSNorm, q/k/v projections with bias, o_proj without, rotary
// embeddings (rotate_half), grouped-query attention and a SwiGLU MLP; lm_head may be tied to
// embed_tokens.
var qwen2 = &Family{
	Architecture: "Qwen2ForCausalLM",
	Tensors:      qwen2Tensors,
	check:        qwen2Check,
}

// Names of the per-layer tensors, relative to "model.layers.N.". The order inside each fused
// group is the order of the group's blob records and of its concatenated outputs.
const (
	InputLayernorm         = "input_layernorm.weight"
	QProj                  = "self_attn.q_proj.weight"
	KProj                  = "self_attn.k_proj.weight"
	VProj                  = "self_attn.v_proj.weight"
	QBias                  = "self_attn.q_proj.bias"
	KBias                  = "self_attn.k_proj.bias"
	VBias                  = "self_attn.v_proj.bias"
	OProj                  = "self_attn.o_proj.weight"
	PostAttentionLayernorm = "post_attention_layernorm.weight"
	GateProj               = "mlp.gate_proj.weight"
	UpProj                 = "mlp.up_proj.weight"
	DownProj               = "mlp.down_proj.weight"
)

// Names of the tensors outside the layers.
const (
	EmbedTokens = "model.embed_tokens.weight"
	FinalNorm   = "model.norm.weight"
	LMHead      = "lm_head.weight"
)

func qwen2Tensors(c *Config) []Tensor {
	h, inter := c.HiddenSize, c.IntermediateSize
	q, kv := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	t := []Tensor{{Name: EmbedTokens, Shape: []int{c.VocabSize, h}, Role: RoleEmbedding, Layer: -1}}
	for i := 0; i < c.NumHiddenLayers; i++ {
		l := func(suffix string, role Role, group string, shape ...int) Tensor {
			return Tensor{Name: LayerTensor(i, suffix), Shape: shape, Role: role, Layer: i, Group: group}
		}
		t = append(t,
			l(InputLayernorm, RoleNorm, "", h),
			l(QProj, RoleLinear, GroupQKV, q, h),
			l(KProj, RoleLinear, GroupQKV, kv, h),
			l(VProj, RoleLinear, GroupQKV, kv, h),
			l(QBias, RoleBias, "", q),
			l(KBias, RoleBias, "", kv),
			l(VBias, RoleBias, "", kv),
			l(OProj, RoleLinear, GroupO, h, q),
			l(PostAttentionLayernorm, RoleNorm, "", h),
			l(GateProj, RoleLinear, GroupMLP, inter, h),
			l(UpProj, RoleLinear, GroupMLP, inter, h),
			l(DownProj, RoleLinear, GroupMLP, h, inter),
		)
	}
	t = append(t, Tensor{Name: FinalNorm, Shape: []int{h}, Role: RoleNorm, Layer: -1})
	if !c.TieWordEmbeddings {
		t = append(t, Tensor{Name: LMHead, Shape: []int{c.VocabSize, h}, Role: RoleLMHead, Layer: -1})
	}
	return t
}

func qwen2Check(c *Config, p *configParser) error {
	if c.HiddenAct != "silu" {
		return &ConfigError{File: p.file, Field: "hidden_act", Msg: fmt.Sprintf("%q is not supported; Qwen2 uses \"silu\"", c.HiddenAct)}
	}
	if p.optBool("use_sliding_window", false) {
		return &ConfigError{File: p.file, Field: "use_sliding_window", Msg: "sliding-window attention is not supported; expected false"}
	}
	if p.has("rope_scaling") {
		var rs struct {
			Type     string `json:"type"`
			RopeType string `json:"rope_type"`
		}
		_ = json.Unmarshal(p.raw["rope_scaling"], &rs)
		kind := rs.RopeType
		if kind == "" {
			kind = rs.Type
		}
		if kind != "default" {
			return &ConfigError{File: p.file, Field: "rope_scaling", Msg: fmt.Sprintf("rope scaling %q is not supported; expected null or \"default\"", kind)}
		}
	}
	return p.err
}
