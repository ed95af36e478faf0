// Package cpu is anepack's CPU backend: the Qwen2 forward pass in float32 over the fp16 (or f32)
// weights of a memory-mapped bundle, read in place.
//
// One call of [State.Forward] runs a batch of tokens through the network the way Hugging Face's
// Qwen2ForCausalLM does (see forward.go, written to be read top to bottom like llama2.c's
// run.c): embedding, then per layer RMSNorm, Q/K/V projections with bias, rotary embeddings
// (rotate_half, HF's float32 tables), grouped-query causal attention over the KV cache, the O
// projection, RMSNorm and the SwiGLU MLP, each with its residual; then the final norm and the LM
// head (the tied embedding or lm_head, over its row chunks).
//
// Prefill multiplies the whole batch by each weight matrix (GEMM); decode is the same code with
// one token, where every product is a GEMV that streams the weights once. The matrix products
// run on package kernels (assembly where the CPU has it) split over the cores by a kernels.Pool;
// the projections that share an input (Q, K and V; gate and up) go out as one parallel dispatch.
// After the first call nothing is allocated: the activations, the KV cache and per-thread
// scratch live in the State.
//
// Exactness: activations and accumulation are float32 like HF's fp32 reference, and the
// order-sensitive steps (RMSNorm, RoPE tables, softmax) follow PyTorch's order of operations;
// only the summation order inside dot products differs, which the golden tests bound at 1e-3 on
// the logits.
package cpu
