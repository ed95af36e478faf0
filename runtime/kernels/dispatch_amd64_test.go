//go:build !noasm

package kernels

import "testing"

// TestAVX2Level runs the matrix kernel tests again on the AVX2 kernels when
// the machine would otherwise pick the AVX-512 ones, so that both levels are
// tested on an AVX-512 machine (the Go twins are tested on their own in each
// test).
func TestAVX2Level(t *testing.T) {
	if !useAVX512 {
		t.Skip("the default run already uses the AVX2 kernels (no AVX-512 here)")
	}
	useAVX512 = false
	defer func() { useAVX512 = true }()
	t.Run("MatVec", TestMatVec)
	t.Run("MatMul", TestMatMul)
	t.Run("MatMulBlocks", TestMatMulBlocks)
	t.Run("OneTokenIsMatVec", TestMatMulOneTokenIsMatVec)
}

// isaLevel is one instruction-set level of the matrix kernels; set switches
// to it and returns a func that switches back.
type isaLevel struct {
	name string
	set  func() (restore func())
}

// isaLevels lists the levels this machine can run, best first.
func isaLevels() []isaLevel {
	saved2, saved512 := useAVX2, useAVX512
	restore := func() { useAVX2, useAVX512 = saved2, saved512 }
	var l []isaLevel
	if saved512 {
		l = append(l, isaLevel{"avx512", func() func() { return restore }})
	}
	if saved2 {
		l = append(l, isaLevel{"avx2", func() func() { useAVX512 = false; return restore }})
	}
	return append(l, isaLevel{"go", func() func() { useAVX2, useAVX512 = false, false; return restore }})
}
