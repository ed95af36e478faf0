// Package pack is the anepack pipeline: it turns a Hugging Face checkpoint directory into one
// .aneb bundle. It validates the config and tensors against the architecture, converts the
// weights (BF16 -> FP16 or F32), lays every linear weight out as an ANE weight blob whose FP16
// payload the CPU backend also reads in place, compiles the tokenizer into binary tables, and
// writes the bundle through a temp file that is renamed into place only when complete.
package pack
