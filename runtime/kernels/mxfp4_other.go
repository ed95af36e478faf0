//go:build (!amd64 && !arm64) || noasm

package kernels

// Without assembly the mxfp4 products run their Go twins.

func matVecMXFP4Fast(y []float32, w, e []byte, x []float32, rows, cols int) bool { return false }

func dequantMXFP4Fast(dst []float32, w, e []byte) bool { return false }

func mxfp4Impl() string { return "go" }
