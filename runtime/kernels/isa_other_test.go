//go:build (!amd64 && !arm64) || noasm

package kernels

// saveISA has nothing to save where every kernel is Go.
func saveISA() (restore func()) { return func() {} }
