// Package mil generates the MIL programs anepack runs on the Apple Neural Engine and executes
// them on any machine with a MIL interpreter, the "sim". Nothing here needs Apple hardware:
// the sim runs the very text and weight blobs the ANE compiler would receive.
//
// # Generation
//
// Programs returns every kernel a bundle carries, for each layer, each of the architecture's
// fused groups (arch.Family.Groups) and each bucket S (prefill buckets, default 32..512, plus
// S = 32 which also serves decode):
//
//	layers.L.attn_qkv.sS  x [1, H, 1, S] -> y [1, Cq+2Ckv, 1, S] = q | k | v (+ bias)
//	layers.L.attn_o.sS    x [1, Cq, 1, S] -> y [1, H, 1, S] (+ bias)
//	layers.L.mlp.sS       x [1, H, 1, S] -> y [1, H, 1, S] = down(silu(gate(x)) · up(x))
//	lm_head.K.s32         x [1, H, 1, 32] -> y [1, rows of chunk K, 1, 32]
//
// The text is pure string building, deterministic, in the syntax of docs/ane.md ("Program text"):
// program(1.3), func main<ios18>, fp16 I/O without casts, one input x and one output y (the
// projections of a group are concatenated along channels rather than returned as outputs of
// unequal sizes), op parameters as named consts, every statement named after its unique
// variable, 1x1 convs with weights [out, in, 1, 1] from BLOBFILE records.
//
// # Weight blobs
//
// One blob file per fused group per layer, and one per LM-head chunk (BlobSpecs, GroupRecords):
//
//	attn_qkv  q [Cq, H, 1, 1], k [Ckv, H, 1, 1], v [Ckv, H, 1, 1],
//	          qkv_bias [1, Cq+2Ckv, 1, 1] fp16 = q_proj.bias | k_proj.bias | v_proj.bias (when present)
//	attn_o    o [H, Cq, 1, 1], o_bias [1, H, 1, 1] (when present)
//	mlp       gate [I, H, 1, 1], up [I, H, 1, 1], down [H, I, 1, 1], then a bias per biased member
//	lm_head.K rows [start, end) of lm_head.weight, or of embed_tokens when tied: at most
//	          Options.MaxLMHeadRows (default 32000) rows per chunk
//
// Weights are the checkpoint's row-major [out, in] bytes (the CPU reads the same payloads in
// place), fp16. The blobs of f32 bundles hold fp32 records for the CPU, and such bundles carry
// no programs: the ANE computes in fp16 and no runtime has shown it a cast of fp32 weights.
// Bias records are always fp16: small ANE-only copies (the CPU keeps its F32 bias tensors),
// each added by one broadcast add. The tied embedding is fp16 like every embedding.
//
// # Simulation
//
// Parse reads MIL text exactly as stored: the program(1.3)/ios18 syntax and the older
// program(1.0)/ios16 syntax with tensor<string, []> scalars, the attribute-style iOS16
// constexpr ops and the inline-argument iOS18 ones, `//` comments. Compile resolves BLOBFILE
// constants against the blob bytes (through package blobfile: the offset must name a 0xDEADBEEF record whose dtype code and
// size match the declared type), checks the type and shape of every statement, folds
// constants (constexpr ops, casts of constants), and plans buffers, reusing a buffer
// once its tensor is dead. Executable.Eval then runs with no allocation: float32 arithmetic,
// each fp16 result rounded to fp16 (round to nearest even), which is the ANE's fp16 datapath
// up to its unpublished accumulation order (the sim accumulates dot products in float32).
// 1x1 convs and matmuls are split over CPUs by output rows, with weights converted to float32
// once per blob record (WeightCache shares them between buckets).
//
// The constexpr ops (constexpr_affine_dequantize, constexpr_blockwise_shift_scale and both
// constexpr_lut_to_dense ops) decompress with coremltools' reference arithmetic, roundings
// included. Compile bounds what a program can make it allocate before allocating: no
// dimension above the ANE's 65536, no tensor that outgrows both its operands and 64 times the
// program's largest input or output, and a byte budget (CompileOptions.MaxBytes) for all it
// computes (docs/ane.md, "Bounds"). With CompileOptions.TrackRange an executable records the
// largest magnitude its ops produce, the fp16 headroom of the kernel (Range).
//
// SplitBlobs rewrites a program and its weight files so that every tensor is a file of its
// own at offset 64 (LayoutSplit), the layout reported to be the only one that works on M1; the
// sim gives bit-identical results in both layouts.
//
// EvalColumns computes only the first k columns of a column-local program (every op maps
// position s to position s: convs, elementwise ops, channel concat...), bit for bit what Eval
// gives there; decode uses it with one live column out of 32.
//
// The sim refuses what the ANE is known to refuse or to get wrong, so that a program that runs
// here should run there: fp16 I/O whose last dimension is below or not a multiple of 32 (fp32:
// 16), several outputs of unequal sizes, inputs or outputs whose names do not sort in
// declaration order (the ANE binds them alphabetically), unknown ops, duplicate op names,
// BLOBFILE offsets that are not records, dtype or size mismatches, a program(1.0) header on an
// ios18 body, and the iOS16 constexpr ops written with input-style arguments. It also refuses,
// as unsupported, valid MIL it does not implement (grouped or strided convs, conv bias, ...).
// Errors wrap ErrANE, ErrUnsupported, ErrType or ErrWeights.
//
// # Backends
//
// Backend and Loaded are the seam between kernel dispatch and evaluation. SimBackend
// implements them here; the darwin ANE driver (runtime/ane) implements them by compiling the
// same MIL text and blobs. Dispatcher, shared by both, picks the smallest bucket for a number
// of positions (splitting runs longer than the largest bucket), packs token-major float32
// activations into zero-padded channel-major fp16 rows, evaluates, and unpacks the live
// columns.
package mil
