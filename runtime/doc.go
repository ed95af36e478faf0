// Package runtime runs a packed model: it opens a .aneb bundle as a [Model] (the validated config,
// the architecture's description from package arch, and zero-copy views of every tensor in the
// memory mapping), runs the one forward pass every architecture and backend shares ([Decoder]),
// keeps one conversation's state in a [Session] (the tokens whose keys and values a backend has
// cached), samples the next token ([Sampler]: greedy, temperature, top-k, top-p, min-p,
// repetition penalty, seeded) and drives generation ([Session.Generate]: streaming text, eos ids
// and stop strings, cancellation).
//
// # One forward pass
//
// [Decoder] is the network of arch.Family, written once (forward.go reads top to bottom like
// llama2.c's run.c): embedding, per layer the norms, a token mixer and the MLP, then the final
// norm and the LM head. The token mixer is attention (attention.go: the fused projections,
// per-head q/k norms, RoPE with default or llama3-scaled frequencies and partial rotation,
// causal grouped-query attention over the KV cache, an optional output gate) or, on the layers
// layer_types names linear_attention, a Gated DeltaNet (deltanet.go: a causal convolution and a
// per-head recurrent state of fixed size, with snapshots to resume from, recurrent.go). The MLP
// is dense or, on the sparse layers of a mixture of experts, the experts a router picks for each
// token (experts.go: the decoder routes each token in float32, the backend runs each chosen
// expert once for all the tokens of a pass that chose it, [Routes]). A
// backend supplies only the linear layers, as [Projections]: runtime/cpu runs them as float32
// GEMV/GEMM over the bundle's weights (each storage type, the quantized activations and the AMX
// split of the input are its own), runtime/ane as the bundle's ANE programs (on the Neural
// Engine or in the MIL simulator). What every backend shares stays here: the embedding lookup
// (embedding.go, which reads a q8 or q4 table through package quant's definition of its values),
// the norms, attention and the KV cache.
//
// The backend packages import this one and embed a Decoder in their [Backend]; this package
// never imports a backend. Package runtime/backend opens one by name or picks one ("auto": the
// Neural Engine where its self-test passed, else the CPU). The shared kernels (RoPE, attention,
// norms, the matrix products) are in runtime/kernels.
//
// Go's own runtime package is imported as goruntime where it is needed.
package runtime
