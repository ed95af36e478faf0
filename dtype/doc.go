// Package dtype is anepack's one vocabulary of element types. Every layer that stores or reads
// numbers names them with a DType: the checkpoint reader (safetensors spells them "BF16", "F16",
// "F32"), the converter, the bundle manifest ("bf16", "f16", "f32"), the MIL generator and
// simulator ("bf16", "fp16", "fp32") and the weight blob files (the numeric codes of Core ML's
// blob format). Each spelling is a column of one table here, so adding a storage type is one row.
//
// It is a leaf package: it imports nothing of anepack, and everything above may import it.
package dtype
