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
//   - amd64: AVX2+FMA+F16C assembly (generated with avo by internal/gen) for
//     MatVec*, MatMul*, Dot, Sum, Axpy, SwiGLU and Softmax, chosen at run
//     time with golang.org/x/sys/cpu; CPUs without those features use Go;
//   - arm64: NEON assembly (kernels_arm64.s) for MatVec*, MatMul* (as
//     row-blocked matrix-vector products), Dot and Axpy;
//   - other CPUs, and any build with -tags noasm: the Go twins only.
//
// Exactness: the assembly sums products in 8 (or 16) interleaved lanes and
// reduces them at the end, the Go twins sum in their own order, so results
// differ by float32 rounding only. For a dot product of n terms both stay
// within the classic bound |error| <= n * 2^-24 * sum|w*x| of the exact
// value, and the tests hold them to it (integer-valued inputs, whose sums are
// exact in float32, must agree bit for bit).
//
// Length errors are programming errors, not bad input: the kernels panic with
// a message naming the kernel and the argument, like an index out of range.
package kernels
