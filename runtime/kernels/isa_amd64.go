//go:build !noasm

package kernels

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

//go:generate go run -C internal/gen . -pkg kernels -out ../../kernels_amd64.s -stubs ../../stubs_amd64.go -tiles ../../tiles_amd64.go -qtiles ../../qtiles_amd64.go -neon ../../gemm_arm64.s -neon-stubs ../../gemm_stubs_arm64.go

// useAVX2 selects the assembly: AVX2 for 256-bit vectors, FMA for the
// multiply-adds and F16C for VCVTPH2PS (fp16 weights widened in registers).
// Tests switch it (and useAVX512) off to run every level this CPU has.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// useAVX512 selects the AVX-512 matrix kernels (avx512_amd64.go) over the
// AVX2 ones: AVX512F for 16-lane VCVTPH2PS and FMAs on ZMM, AVX512VL for the
// EVEX-encoded 256/128-bit instructions of their horizontal sums. x/sys/cpu
// also checks that the OS saves the AVX-512 state. They need the AVX2 level
// too (the vector helpers stay AVX2).
var useAVX512 = useAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

// HasAsm reports whether the kernels use assembly on this machine.
func HasAsm() bool { return useAVX2 }

// The *Fast functions run the assembly on the part it handles and return the
// number of columns (or elements) done; the caller finishes the rest in Go.
// With no usable assembly they return 0 and the Go twin does everything.

func matVecF16Fast(y []float32, w []uint16, x []float32, rows, cols int) int {
	if useAVX512 {
		return matVecF16Z(y, w, x, rows, cols)
	}
	k := cols &^ 7
	if !useAVX2 || k == 0 || rows == 0 {
		return 0
	}
	matVecF16AVX2(y, w, x, rows, cols, k)
	return k
}

func matVecF32Fast(y []float32, w []float32, x []float32, rows, cols int) int {
	if useAVX512 {
		return matVecF32Z(y, w, x, rows, cols)
	}
	k := cols &^ 7
	if !useAVX2 || k == 0 || rows == 0 {
		return 0
	}
	matVecF32AVX2(y, w, x, rows, cols, k)
	return k
}

// matMulF16Fast computes the first cols&^7 columns' contribution of output
// rows [lo, hi) for all n tokens, tile by tile. The loop order keeps the hot
// data in cache: a block of weight rows small enough for L2 is swept once
// per 4-token tile, whose activations stay in L1, so each micro-kernel step
// streams only the 3 weight vectors (48 bytes for fp16) from L2.
func matMulF16Fast(y, x []float32, w []uint16, n, rows, cols, lo, hi int) int {
	if useAVX512 {
		return matMulF16Z(y, x, w, n, rows, cols, lo, hi)
	}
	k := cols &^ 7
	if !useAVX2 || k == 0 {
		return 0
	}
	rb := blockRows(cols * 2)
	for r0 := lo; r0 < hi; r0 += rb {
		r1 := min(hi, r0+rb)
		panels := (r1 - r0) / tileRows
		for t := 0; t < n; t += tileTokens {
			tt := min(tileTokens, n-t)
			xt := x[t*cols : (t+tt)*cols]
			r := r0
			if tt == tileTokens && panels > 0 {
				// Full tiles: one call sweeps all whole panels of the block.
				re := r0 + panels*tileRows
				gemmF16Panels(y[t*rows+r0:(t+tt-1)*rows+re], rows, xt, w[r0*cols:re*cols], cols, k, panels)
				r = re
			}
			for ; r < r1; r += tileRows {
				rr := min(tileRows, r1-r)
				gemmF16Tiles[tt-1][rr-1](y[t*rows+r:(t+tt-1)*rows+r+rr], rows, xt, w[r*cols:(r+rr)*cols], cols, k)
			}
		}
	}
	return k
}

// matMulF32Fast is matMulF16Fast for float32 weights.
func matMulF32Fast(y, x, w []float32, n, rows, cols, lo, hi int) int {
	if useAVX512 {
		return matMulF32Z(y, x, w, n, rows, cols, lo, hi)
	}
	k := cols &^ 7
	if !useAVX2 || k == 0 {
		return 0
	}
	rb := blockRows(cols * 4)
	for r0 := lo; r0 < hi; r0 += rb {
		r1 := min(hi, r0+rb)
		panels := (r1 - r0) / tileRows
		for t := 0; t < n; t += tileTokens {
			tt := min(tileTokens, n-t)
			xt := x[t*cols : (t+tt)*cols]
			r := r0
			if tt == tileTokens && panels > 0 {
				// Full tiles: one call sweeps all whole panels of the block.
				re := r0 + panels*tileRows
				gemmF32Panels(y[t*rows+r0:(t+tt-1)*rows+re], rows, xt, w[r0*cols:re*cols], cols, k, panels)
				r = re
			}
			for ; r < r1; r += tileRows {
				rr := min(tileRows, r1-r)
				gemmF32Tiles[tt-1][rr-1](y[t*rows+r:(t+tt-1)*rows+r+rr], rows, xt, w[r*cols:(r+rr)*cols], cols, k)
			}
		}
	}
	return k
}

// blockRows returns how many weight rows of rowBytes bytes make a block of
// about gemmBlockBytes, as a multiple of the AVX2 tile height.
func blockRows(rowBytes int) int { return blockRowsOf(rowBytes, tileRows) }

// blockRowsOf is blockRows for a tile of height rows.
func blockRowsOf(rowBytes, height int) int {
	rb := gemmBlockBytes / max(rowBytes, 1)
	return max(height, rb/height*height)
}

// gemmRowMultiple is the height of the GEMM micro-tile in use: Pool splits
// GEMM rows in multiples of it so that no chunk ends in a partial panel.
func gemmRowMultiple() int {
	if useAVX512 {
		return zRows
	}
	return tileRows
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

func swigluFast(dst, gate, up []float32) int {
	n := len(dst) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	swigluAVX2(dst[:n], gate[:n], up[:n])
	return n
}

func geluTanhFast(dst, x []float32) int {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	geluTanhAVX2(dst[:n], x[:n])
	return n
}

func geGLUFast(dst, gate, up []float32) int {
	n := len(dst) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	geGLUAVX2(dst[:n], gate[:n], up[:n])
	return n
}

func expSumFast(dst, x []float32, m float32) (float32, int) {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0, 0
	}
	return expSumAVX2(dst[:n], x[:n], m), n
}

func axpyFast(y []float32, a float32, x []float32) int {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	axpyAVX2(y[:n], x[:n], a)
	return n
}

func maxFast(x []float32) (float32, int) {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0, 0
	}
	return maxAVX2(x[:n]), n
}

func scaleFast(x []float32, a float32) int {
	n := len(x) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	scaleAVX2(x[:n], a)
	return n
}

// chosenImpls names the kernels Kernels reports.
func chosenImpls() (gemv, gemm, nn, vec string) {
	switch {
	case useAVX512:
		gemv = "avx512, no software prefetch"
		if zPrefetch {
			gemv = "avx512, prefetch 4 KiB ahead"
		}
		return gemv, fmt.Sprintf("avx512 %dx%d", zTokens, zRows), fmt.Sprintf("avx512 %dx64", nnRows), "avx2"
	case useAVX2:
		return "avx2", fmt.Sprintf("avx2 %dx%d", tileTokens, tileRows), fmt.Sprintf("avx2 %dx16", nnRows), "avx2"
	}
	return "go", "go", "go", "go"
}

// isaNames are ISALevels on amd64.
var isaNames = []string{"amx", "avx512", "avx2", "go"}

// ISA names the best instruction-set level the kernels use now (see ISALevels): what the CPU
// and the operating system allow, under LimitISA's cap.
func ISA() string {
	switch {
	case amxAvailable():
		return "amx"
	case useAVX512:
		return "avx512"
	case useAVX2:
		return "avx2"
	}
	return "go"
}

// capISA turns off the kernels above level (LimitISA has checked the name).
func capISA(level string) {
	switch level {
	case "avx512":
		useAMX = false
	case "avx2":
		useAVX512, useAVX512BW, useVNNI, useAMX = false, false, false, false
	case "go":
		useAVX2, useAVX512, useAVX512BW, useVNNI, useAMX = false, false, false, false, false
	}
}
