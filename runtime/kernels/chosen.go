package kernels

import "fmt"

// Kernel names the code one operation runs on this machine.
type Kernel struct {
	Op   string `json:"op"`   // the operation
	Impl string `json:"impl"` // the instruction set, and the micro-tile of a matrix product
}

// Kernels lists the kernel each operation uses on this machine, as chosen at run time from the
// CPU's features (always the Go twins in a -tags noasm build). anerun doctor prints it.
func Kernels() []Kernel {
	gemv, gemm, nn, vec := chosenImpls()
	q8f, q4f := q8FloatImpl(), q4FloatImpl()
	q8Prefill := amxImpl(q8f)
	// Without a float-activation kernel the assembly W8A16 one takes every batch (arm64): say
	// so rather than name the Go twin, which runs for none.
	if QuantKernels() != "go" {
		const none = "none: matmul q8/q4 takes every batch"
		if !q8FloatFast() {
			q8f, q8Prefill = none, none
		}
		if !q4FloatFast() {
			q4f = none
		}
	}
	return []Kernel{
		{"matvec f16/f32 (decode)", gemv},
		{"matmul f16/f32 (prefill)", gemm},
		{fmt.Sprintf("matmul f16, %d+ tokens (prefill)", amxMinTokens), amxImpl(gemm)},
		{"attention (prefill)", nn},
		{"attention (decode), softmax, swiglu, gelu, add", vec},
		{"matmul q8/q4", QuantKernels()},
		{"matmul q8, batched (float activations)", q8f},
		{fmt.Sprintf("matmul q8, %d+ tokens (prefill)", amxMinTokens), q8Prefill},
		{"matmul q4, batched (float activations)", q4f},
		{"matvec mxfp4 (decode), its dequantization for the matmul", mxfp4Impl()},
	}
}
