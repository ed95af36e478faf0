package arch

// families maps a Hugging Face architecture name to its description. It is the one list of
// supported architectures: adding a family whose operations exist is a file like qwen3.go and a
// line here. It is read through Lookup, IsSupported and Supported only, so that no caller can
// change what the rest of the program supports.
var families = map[string]*Family{
	qwen2.Architecture:    qwen2,
	qwen3.Architecture:    qwen3,
	llama.Architecture:    llama,
	gpt2.Architecture:     gpt2,
	gemma3.Architecture:   gemma3,
	qwen35.Architecture:   qwen35,
	qwen3MoE.Architecture: qwen3MoE,
	mistral.Architecture:  mistral,
	smollm3.Architecture:  smollm3,
	olmo2.Architecture:    olmo2,
	olmo3.Architecture:    olmo3,
	// The Hub's Qwen3.5 checkpoints: the same language model, nested in a multimodal one.
	qwen35VL.Architecture: qwen35VL,
}
