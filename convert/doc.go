// Package convert reads Hugging Face safetensors checkpoints (one file or shards with an index),
// checks their tensors against the architecture, and converts BF16/F16/F32 tensors to the FP16 or
// F32 the bundle stores. Weights already quantized in a form the bundle keeps as it is are read
// as they are: MLX 4-bit (MLX4) and the MXFP4 blocks and scales of gpt-oss (MXFP4).
//
// Files are memory-mapped and parsed with github.com/nlpodyssey/safetensors, which works on a
// byte slice and never reads the file itself; tensor data are sub-slices of the mapping, so a
// checkpoint of any size costs only the pages being converted.
package convert
