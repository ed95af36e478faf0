// Package kernels holds the compute kernels of anepack's CPU backend: matrix
// times vector (decode), matrix times matrix (prefill) and the small per-token
// vector operations, plus a worker Pool that splits the big ones over cores.
//
// Layout: a weight matrix is row-major [rows, cols] (Hugging Face's
// [out_features, in_features]), given either as fp16 bits ([]uint16) or as
// float32, and is read in place (typically straight from a memory-mapped
// bundle; nothing here copies or converts it wholesale). Activations and all
// accumulation are float32.
//
// Every kernel with an assembly fast path has a pure-Go twin with the same
// contract, and the tests compare the two on odd shapes:
//   - amd64 with AVX-512 (F and VL: Skylake-SP and later Xeons, Zen 4/5):
//     16-lane MatVec* and a 6-token x 4-row MatMul* (VCVTPH2PS on ZMM, all 32
//     registers, column blocks that keep a tile's activations in L1), and a
//     6x64 NN GEMM for attention (avx512.go and nn.go in internal/gen); the
//     MatVec comes in two forms, with software prefetch 4 KiB ahead for
//     Intel's cores and without for AMD's, whose hardware prefetchers keep up
//     alone (zPrefetch, by the CPUID vendor);
//   - amd64 with AVX2+FMA+F16C: 8-lane MatVec*, a 4x3 MatMul*, a 6x16 NN
//     GEMM, and Dot, Sum, Max, Scale, Axpy, SwiGLU and Softmax's exp (the
//     vector helpers stay AVX2 on AVX-512 machines); all generated with avo
//     by internal/gen and chosen at run time with golang.org/x/sys/cpu, the
//     best level the CPU has (tests run every level the machine has);
//   - amd64 with AMX-BF16 (Sapphire Rapids and later Xeons; Linux grants the tile state on
//     request): MatMulF16AMX, the prefill product on bfloat16 tiles, exact in float32 because
//     each activation is split into three bfloat16 parts and each fp16 weight into two
//     (amx.go); MatMulQ8AMX likewise for q8 codes (each a bfloat16 exactly); the input
//     split and weight packing run on AVX512BW wherever that exists;
//   - arm64: NEON MatVec* (kernels_arm64.s), a 4x4 MatMul* and a 6x16 NN
//     GEMM (gemm_arm64.s, written out by internal/gen/neon.go), Dot, Axpy,
//     and Softmax's exp and max, Scale, SwiGLU, GELU and GeGLU
//     (vecops_arm64.s, the AVX2 kernels' exp step for step);
//   - mxfp4 weights (mxfp4.go): a GEMV and a dequantization on AVX-512, AVX2 (internal/gen,
//     `-set mxfp4`) and NEON (mxfp4_arm64.s) that look each 32-column block's weights up in a
//     table of its 16 values; the batched product dequantizes panels of rows for the float32
//     GEMM;
//   - other CPUs, and any build with -tags noasm: the Go twins only.
//
// Kernels names the choice for each operation (anerun doctor prints it).
//
// Exactness: the assembly sums products in 8 (or 16) interleaved lanes and
// reduces them at the end, the Go twins sum in their own order, so results
// differ by float32 rounding only. For a dot product of n terms both stay
// within the classic bound |error| <= n * 2^-24 * sum|w*x| of the exact
// value, and the tests hold them to it (integer-valued inputs, whose sums are
// exact in float32, must agree bit for bit).
//
// That rules out arithmetic in fp16: AVX512-FP16's VFMADDPH and NEON's fp16
// FMLA round every partial sum to 11 bits. Their exact alternatives (NEON's
// FMLAL, fp16 products into float32, with each activation split into fp16
// parts) take 2-3 instructions per product of parts where the float32 kernels
// take one FMA and a widening shared by every token, so none is built; AMX
// gets its speed exactly because a tile product does 16x the multiply-adds of
// an FMA (amx.go).
//
// Length errors are programming errors, not bad input: the kernels panic with
// a message naming the kernel and the argument, like an index out of range.
package kernels
