// Package mil is the MIL language as anepack's ANE programs use it, and its simulator, the
// "sim": a lexer, parser and AST for the text, the op set with its type rules, a compiler that
// resolves weights and plans buffers, and an interpreter that executes programs on any
// machine. Nothing here needs Apple hardware: the sim runs the very text and weight blobs the
// ANE compiler would receive. The programs themselves come from package milgen (the
// generator) and the weight layout from package blobplan; runtime/ane runs them.
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
// largest magnitude its ops produce, the fp16 headroom of the program (Range).
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
package mil
