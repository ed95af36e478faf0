package arch

// Families maps a Hugging Face architecture name to its table. It is the one list of supported
// architectures; adding a family means adding a file like qwen2.go and a line here.
var Families = map[string]*Family{
	"Qwen2ForCausalLM": qwen2,
}
