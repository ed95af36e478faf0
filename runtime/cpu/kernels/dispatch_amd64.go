//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/gen . -pkg kernels -out ../../kernels_amd64.s -stubs ../../stubs_amd64.go

// useAVX2 selects the assembly: AVX2 for 256-bit vectors, FMA for the
// multiply-adds and F16C for VCVTPH2PS (fp16 weights widened in registers).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// HasAsm reports whether the kernels use assembly on this machine.
func HasAsm() bool { return useAVX2 }

// The *Fast functions run the assembly on the part it handles and return the
// number of columns (or elements) done; the caller finishes the rest in Go.
// With no usable assembly they return 0 and the Go twin does everything.

func matVecF16Fast(y []float32, w []uint16, x []float32, rows, cols int) int {
	k := cols &^ 7
	if !useAVX2 || k == 0 || rows == 0 {
		return 0
	}
	matVecF16AVX2(y, w, x, rows, cols, k)
	return k
}

func matVecF32Fast(y []float32, w []float32, x []float32, rows, cols int) int {
	k := cols &^ 7
	if !useAVX2 || k == 0 || rows == 0 {
		return 0
	}
	matVecF32AVX2(y, w, x, rows, cols, k)
	return k
}

// gemmF16Tiles and gemmF32Tiles are the micro-kernels indexed by
// [tokens-1][rows-1] of the tile.
var gemmF16Tiles = [tileTokens][tileRows]func(y []float32, ldy int, x []float32, w []uint16, cols, k int){
	{gemmF16T1R1, gemmF16T1R2, gemmF16T1R3},
	{gemmF16T2R1, gemmF16T2R2, gemmF16T2R3},
	{gemmF16T3R1, gemmF16T3R2, gemmF16T3R3},
	{gemmF16T4R1, gemmF16T4R2, gemmF16T4R3},
}

var gemmF32Tiles = [tileTokens][tileRows]func(y []float32, ldy int, x []float32, w []float32, cols, k int){
	{gemmF32T1R1, gemmF32T1R2, gemmF32T1R3},
	{gemmF32T2R1, gemmF32T2R2, gemmF32T2R3},
	{gemmF32T3R1, gemmF32T3R2, gemmF32T3R3},
	{gemmF32T4R1, gemmF32T4R2, gemmF32T4R3},
}

// matMulF16Fast computes the first cols&^7 columns' contribution of output
// rows [lo, hi) for all n tokens, tile by tile.
func matMulF16Fast(y, x []float32, w []uint16, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if !useAVX2 || k == 0 {
		return 0
	}
	for r := lo; r < hi; r += tileRows {
		rr := min(tileRows, hi-r)
		wr := w[r*cols : (r+rr)*cols]
		for t := 0; t < n; t += tileTokens {
			tt := min(tileTokens, n-t)
			gemmF16Tiles[tt-1][rr-1](y[t*rows+r:(t+tt-1)*rows+r+rr], rows, x[t*cols:(t+tt)*cols], wr, cols, k)
		}
	}
	return k
}

func matMulF32Fast(y, x, w []float32, n, rows, cols, lo, hi int) int {
	k := cols &^ 7
	if !useAVX2 || k == 0 {
		return 0
	}
	for r := lo; r < hi; r += tileRows {
		rr := min(tileRows, hi-r)
		wr := w[r*cols : (r+rr)*cols]
		for t := 0; t < n; t += tileTokens {
			tt := min(tileTokens, n-t)
			gemmF32Tiles[tt-1][rr-1](y[t*rows+r:(t+tt-1)*rows+r+rr], rows, x[t*cols:(t+tt)*cols], wr, cols, k)
		}
	}
	return k
}

func sumFast(x []float32) (float32, int) {
	n := len(x) &^ 31
	if !useAVX2 || n == 0 {
		return 0, 0
	}
	return sumAVX2(x[:n]), n
}

func dotFast(x, y []float32) (float32, int) {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0, 0
	}
	return dotAVX2(x[:n], y[:n]), n
}
