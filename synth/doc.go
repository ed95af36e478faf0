// Package synth generates SYNTH-1 checkpoints: deterministic synthetic weights computed from a
// model's config.json, bit-identical in any language that follows the specification below (the
// element stream) and in scalerFor (the role table). They let every test and benchmark use
// full-size models that nobody has to download. The golden files testdata/model-*-tiny.json,
// made with Hugging Face transformers from SYNTH-1 checkpoints, hold the sha256 of every
// tensor (tensor_sha256), which is how a generator is checked.
//
// Per tensor: s0 = FNV-1a-64(name) XOR seed; element i (row-major) is splitmix64's finaliser of
// s0 + (i+1)*0x9E3779B97F4A7C15, mapped to v in [-1, 1), scaled by role in float64, rounded to
// float32 (round-to-nearest-even) and then to bfloat16 with (bits + 0x7FFF + ((bits>>16)&1)) >> 16.
package synth
