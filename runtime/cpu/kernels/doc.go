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
// Every kernel with an assembly fast path (amd64 with AVX2, FMA and F16C,
// detected at run time with golang.org/x/sys/cpu) has a pure-Go twin with the
// same contract; arm64, other CPUs and builds with -tags noasm use the twins.
// The tests compare the two on odd shapes.
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
