//go:build !noasm

package kernels

// mxfp4NEONIndex are the TBL indices of the NEON mxfp4 kernels (mxfp4_arm64.s): four patterns
// that copy code byte j of a group of four to the four bytes of lane j (group g reads bytes
// 4g..4g+3), then the byte offsets 0, 1, 2, 3 of each lane, which turn four copies of 4q into
// the indices of the 4 bytes of table entry q.
var mxfp4NEONIndex = func() (b [80]byte) {
	for g := 0; g < 4; g++ {
		for i := 0; i < 16; i++ {
			b[16*g+i] = byte(4*g + i/4)
		}
	}
	for i := 0; i < 16; i++ {
		b[64+i] = byte(i % 4)
	}
	return b
}()

//go:noescape
func mxfp4MatVecNEON(y []float32, w, e []byte, x []float32, rows, blocks int)

//go:noescape
func mxfp4DequantNEON(dst []float32, w, e []byte, blocks int)

// matVecMXFP4Fast runs MatVecMXFP4 in assembly and reports whether it could.
func matVecMXFP4Fast(y []float32, w, e []byte, x []float32, rows, cols int) bool {
	if !useNEON {
		return false
	}
	mxfp4MatVecNEON(y, w, e, x, rows, cols/mxBlock)
	return true
}

// dequantMXFP4Fast runs dequantMXFP4 in assembly and reports whether it could.
func dequantMXFP4Fast(dst []float32, w, e []byte) bool {
	if !useNEON {
		return false
	}
	mxfp4DequantNEON(dst, w, e, len(dst)/mxBlock)
	return true
}

// mxfp4Impl names the mxfp4 kernels for Kernels.
func mxfp4Impl() string {
	if useNEON {
		return "neon"
	}
	return "go"
}
