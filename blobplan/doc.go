// Package blobplan lays out a bundle's linear weights: which weight blob files a model has,
// which records each holds, and which checkpoint rows, in which type, form each record's
// payload. It reads the architecture description of package arch (the family's fused groups
// and slots) and nothing else of a model; package pack writes the blobs it describes, and
// package milgen generates the ANE programs that read them.
//
// Every bundle stores its linear weights this way, with or without ANE programs: the CPU
// reads the same payloads in place. That is why the layout is a package of its own rather
// than part of the program generator.
//
// One blob file per fused group per layer, and one per LM-head chunk (Blobs, GroupRecords),
// each in Core ML's blob-storage format (package blobfile; docs/ane.md, "Weight blobs"):
//
//	attn_qkv  q [Cq, H, 1, 1], k [Ckv, H, 1, 1], v [Ckv, H, 1, 1],
//	          qkv_bias [1, Cq+2Ckv, 1, 1] fp16 = q_proj.bias | k_proj.bias | v_proj.bias (when present)
//	attn_o    o [H, Cq, 1, 1], o_bias [1, H, 1, 1] (when present)
//	mlp       gate [I, H, 1, 1], up [I, H, 1, 1], down [H, I, 1, 1], then a bias per biased member
//	lm_head.K rows [start, end) of lm_head.weight, or of embed_tokens when tied: at most
//	          Options.MaxLMHeadRows (default 32000) rows per chunk
//
// Gated DeltaNet layers have linear_attn_in (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a)
// and linear_attn_out (out_proj) in place of attn_qkv and attn_o. Sparse layers (a mixture of
// experts) have experts in place of mlp, every expert stacked in one blob:
//
//	experts   expert_gate_up [E·2I, H, 1, 1]: expert e's gate_proj rows, then its up_proj rows,
//	          at rows [e·2I, (e+1)·2I); expert_down [E·H, I, 1, 1]: expert e's down_proj at
//	          rows [e·H, (e+1)·H)
//
// so a token reads only its experts' rows. The router is not a blob record: it is F32 in the
// tensors section, like norms.
//
// Weights are the checkpoint's row-major [out, in] bytes, fp16 by default. The blobs of f32
// bundles hold fp32 records for the CPU. A quantized weight is consecutive records: its codes
// (int8, or uint4), its fp16 scales and, for q4, its fp16 offsets (docs/quantization.md). Bias
// records are always fp16: small ANE-only copies (the CPU keeps its F32 bias tensors). The
// tied embedding is fp16 like every embedding; quantized bundles keep the LM head at q8.
//
// The shapes obey the ANE's limits (MaxANEDim per dimension, docs/ane.md "Limits") in every
// bundle, so that a bundle's weights are the same whether or not it carries programs.
package blobplan
