//go:build !noasm

package kernels

import "testing"

// TestQuantAVX2 runs the quantized kernel tests again on the AVX2 kernels
// when the machine would otherwise pick the VNNI ones, so both are tested
// on a VNNI machine.
func TestQuantAVX2(t *testing.T) {
	if !useVNNI {
		t.Skipf("the default run already uses the %s kernels", QuantKernels())
	}
	useVNNI = false
	defer func() { useVNNI = true }()
	t.Run("Q8", TestMatMulQ8)
	t.Run("Q4", TestMatMulQ4)
	t.Run("RowBlocks", TestQuantRowBlocks)
}
