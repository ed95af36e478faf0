// Package cpu is anepack's CPU backend: the linear layers of the runtime's one forward pass
// (runtime.Decoder), in float32 over the f16, f32, int8 or int4 weights of a memory-mapped
// bundle, read in place, for every architecture package arch describes.
//
// [Projections] computes each fused group of a layer (arch.Family.Groups) as one parallel
// job over the concatenation of its members' output rows: Q, K and V (with their biases)
// cost one wake-up of the worker pool, and the gated MLP's gate and up go out together with the
// activation fused into each work item, then down. The LM head's row chunks are one job.
// Prefill multiplies the whole batch by each weight matrix (GEMM); decode is the same code with
// one token, where every product is a GEMV that streams the weights once (weight.go picks the
// kernel for the weight's storage type). A job prepares its input once in each form its weights
// read (input.go): 16-bit activations for q8, int8 for q4, the bfloat16 split for AMX. After the
// first call nothing is allocated: the per-thread scratch lives in each sequence's projector.
//
// Exactness: activations and accumulation are float32 like HF's fp32 reference; only the
// summation order inside dot products differs, which the golden tests bound at 1e-3 on the
// logits (they reach about 5e-6).
package cpu
