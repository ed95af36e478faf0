// Package mil generates the MIL programs anepack runs on the Apple Neural Engine and executes
// them on any machine with a MIL interpreter, the "sim".
//
// # Generation
//
// Programs returns, for a model config, every kernel a bundle carries: the fused QKV projection
// (three 1x1 convs of one input, q|k|v concatenated along channels, plus the bias), the O
// projection, the whole SwiGLU FFN, and the LM head in chunks of at most 65536 rows, each for
// the prefill buckets and for decode (S = 32). The text is pure string building: deterministic,
// program(1.3) / func main<ios18>, fp16 I/O in the [1, C, 1, S] channel-major layout with S a
// multiple of 32, statements in the syntax of shared/ane-facts.md §4. Blobs lists the weight
// blob files the pack pipeline writes (one per fused group per layer, one per LM-head chunk)
// and the records inside each; Programs takes back where pack put them.
//
// # Simulation
//
// Parse reads MIL text exactly as stored (program(1.3)/ios18 syntax and the older
// program(1.0)/ios16 syntax with tensor<string, []> scalars and attribute-style constexpr ops).
// Compile resolves BLOBFILE constants against the blob bytes, checks the type and shape of
// every statement, folds constants, and plans buffers; Executable.Eval runs the program with
// float32 arithmetic rounded to fp16 after every op whose result is fp16, which is what the
// ANE's fp16 datapath does to within its (unpublished) accumulation order.
//
// The sim refuses what the ANE is known to refuse or to get wrong, so that a program that runs
// here is one that should run there: fp16 I/O with S < 32 or not a multiple of 32 (fp32: 16),
// several outputs of unequal sizes or with names that do not sort in output order (the ANE
// binds I/O alphabetically), unknown ops, BLOBFILE offsets that do not name a 0xDEADBEEF
// record, record dtypes that differ from the declared type, a program(1.0) header on an ios18
// body, and the iOS16 constexpr ops written with input-style arguments.
//
// # Backends
//
// Backend and Loaded are the seam between kernel dispatch and evaluation: the sim implements
// them here (SimBackend), the darwin ANE runtime implements them with the private framework,
// and Dispatcher (bucket choice, channel-major packing) is shared by both.
package mil
