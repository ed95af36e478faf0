// Package arch describes model architectures as data: which Hugging Face config.json fields a
// family reads and how it spells them, which tensors a checkpoint holds (Hugging Face's names,
// shapes, and each tensor's job in the forward pass), which linear layers run together as one
// fused group, and the layer's variants (norm kind, per-head q/k norms, biases, activation,
// RoPE scaling). Convert, pack, synth, the runtime's one forward pass and the MIL generator all
// read this one description; none keeps its own list of names.
//
// A family is one small file (qwen2.go, qwen3.go, llama.go) holding a Family literal; the list
// of families is one literal in families.go (CONTRIBUTING.md, "Adding an architecture").
//
// It is a leaf package: it imports nothing of anepack.
package arch
