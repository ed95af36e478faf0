//go:build !noasm

package kernels

//go:generate go run -C internal/gen . -set mxfp4 -pkg kernels -out ../../mxfp4_amd64.s -stubs ../../mxfp4stubs_amd64.go

// matVecMXFP4Fast runs MatVecMXFP4 in assembly and reports whether it could (every column is
// the assembly's: a row is whole blocks).
func matVecMXFP4Fast(y []float32, w, e []byte, x []float32, rows, cols int) bool {
	switch {
	case useAVX512:
		mxfp4MatVecAVX512(y, w, e, x, rows, cols/mxBlock)
	case useAVX2:
		mxfp4MatVecAVX2(y, w, e, x, rows, cols/mxBlock)
	default:
		return false
	}
	return true
}

// dequantMXFP4Fast runs dequantMXFP4 in assembly and reports whether it could.
func dequantMXFP4Fast(dst []float32, w, e []byte) bool {
	switch {
	case useAVX512:
		mxfp4DequantAVX512(dst, w, e, len(dst)/mxBlock)
	case useAVX2:
		mxfp4DequantAVX2(dst, w, e, len(dst)/mxBlock)
	default:
		return false
	}
	return true
}

// mxfp4Impl names the mxfp4 kernels for Kernels.
func mxfp4Impl() string {
	switch {
	case useAVX512:
		return "avx512"
	case useAVX2:
		return "avx2"
	}
	return "go"
}
