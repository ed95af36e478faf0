// Package milgen generates the MIL programs anepack runs on the Apple Neural Engine: the
// programs a bundle carries, as text in the syntax of package mil, over the weight blobs that
// package blobplan lays out. Package pack stores what it generates; runtime/ane runs it.
//
// Programs returns every program a bundle carries, for each layer, each of the architecture's
// fused groups (arch.Family.Groups) and each bucket S (prefill buckets, default 32..512, plus
// S = 32 which also serves decode), then the LM-head chunks:
//
//	layers.L.attn_qkv.sS  x [1, H, 1, S] -> y [1, Cq+2Ckv, 1, S] = q | k | v (+ bias)
//	layers.L.attn_o.sS    x [1, Cq, 1, S] -> y [1, H, 1, S] (+ bias)
//	layers.L.mlp.sS       x [1, H, 1, S] -> y [1, H, 1, S] = down(silu(gate(x)) · up(x))
//	lm_head.K.s32         x [1, H, 1, 32] -> y [1, rows of chunk K, 1, 32]
//
// Each is a Program: its manifest record (format.Program, the record the bundle keeps of it)
// and its text. The text is pure string building, deterministic, in the syntax of docs/ane.md
// ("Program text"): program(1.3), func main<ios18>, fp16 I/O without casts, one input x and one
// output y (the projections of a group are concatenated along channels rather than returned as
// outputs of unequal sizes), op parameters as named consts, every statement named after its
// unique variable, 1x1 convs with weights [out, in, 1, 1] from BLOBFILE records. Quantized
// weights are read through MIL constexpr ops; f32 weights get no programs (the ANE computes in
// fp16 and no runtime has shown it a cast of fp32 weights), so an f32 bundle is a CPU bundle.
//
// The golden programs of the tests are package mil's testdata/gen_*.mil, derived by hand from
// docs/ane.md; the tests run every generated program in mil's simulator against float64
// references.
package milgen
