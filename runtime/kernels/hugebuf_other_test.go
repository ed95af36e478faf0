//go:build !linux

package kernels

// hugeFloats returns n zeroed float32 (see hugebuf_linux_test.go; no huge pages here).
func hugeFloats(n int) []float32 { return make([]float32, n) }

// hugeUint16s returns n zeroed uint16 (see hugebuf_linux_test.go; no huge pages here).
func hugeUint16s(n int) []uint16 { return make([]uint16, n) }
