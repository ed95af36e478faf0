package kernels

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// Products with the super-block weight types q4k and q6k (package quant has their byte
// layout): every row of cols inputs (a multiple of 256) is cols/256 super-blocks of 144 (q4k)
// or 210 (q6k) bytes, rows after one another. Two contracts, as for q4:
//
//   - Float activations (MatMulQ4KFloat, MatMulQ6KFloat): y = W·x with W dequantized exactly
//     as quant.DequantizeRowQ4K / DequantizeRowQ6K define it and x as given, in float32.
//     The Go version dequantizes a panel of rows once per call (each super-block is read once
//     for all the tokens) and multiplies it with the float32 GEMM.
//   - Int8 activations (MatMulQ4KActs, MatMulQ6KActs), the decode form: x quantized by
//     Int8Acts in blocks of 32, which line up with q4k's sub-blocks and hold two of q6k's, so
//     that each sub-block is an exact integer dot product of codes and activations; the result
//     is the product of the dequantized weights with the dequantized activations, within
//     float32 rounding:
//
//     q4k: y = Σ_blocks Σ_j (d·sc_j)·(da_j·I_j) − (dmin·m_j)·bs_j,  I_j = Σ q·qa over sub-block j
//     q6k: y = Σ_blocks Σ_k (d·da_k)·(sc_2k·I_2k + sc_2k+1·I_2k+1),  I = Σ (q−32)·qa over 16
//
//     (da and bs: Int8Acts' block scale and d·Σqa; every integer there is exact in int32).
//
// The functions here are the Go versions: vector kernels must give the same results within
// float32 rounding (qk_test.go holds them all to a float64 reference).

// Super-block geometry (package quant's SuperBlock, Q4KBlockBytes, Q6KBlockBytes).
const (
	superBlock    = 256
	q4kBlockBytes = 144
	q6kBlockBytes = 210
)

// KFloatActs reports whether a product of n tokens with q4k or q6k weights takes the float
// activations (MatMulQ4KFloat, MatMulQ6KFloat) rather than Int8Acts. In Go the dequantized
// panel times the float32 GEMM is faster than the integer form even for one token (a 896 x
// 4864 q4k GEMV: 11 ms against 14 on the 2-core AMD Zen 5, BenchmarkKProducts), so every
// product takes it; the integer form is the contract of the vector decode kernels to come.
func KFloatActs(n int) bool { return n >= 1 }

// checkK panics on a super-block product's inconsistent lengths.
func checkK(kernel string, blockBytes, nw, rows, cols int) {
	switch {
	case cols <= 0 || cols%superBlock != 0:
		panic(fmt.Sprintf("kernels.%s: cols %d is not a positive multiple of %d", kernel, cols, superBlock))
	case nw < rows*cols/superBlock*blockBytes:
		panic(fmt.Sprintf("kernels.%s: w has %d bytes, want rows*cols/256*%d = %d", kernel, nw, blockBytes, rows*cols/superBlock*blockBytes))
	}
}

// dequantRowQ4K writes the len(dst) weights of the q4k row src, as quant.DequantizeRowQ4K.
func dequantRowQ4K(dst []float32, src []byte) {
	tab := f16Table()
	for b := 0; b < len(dst)/superBlock; b++ {
		blk := src[b*q4kBlockBytes : (b+1)*q4kBlockBytes]
		y := dst[b*superBlock : (b+1)*superBlock]
		d, dmin := tab[binary.LittleEndian.Uint16(blk)], tab[binary.LittleEndian.Uint16(blk[2:])]
		qs := blk[16:]
		for c := 0; c < 4; c++ {
			sc0, m0 := q4kScaleMin(blk[4:16], 2*c)
			sc1, m1 := q4kScaleMin(blk[4:16], 2*c+1)
			a0, b0 := d*float32(sc0), dmin*float32(m0)
			a1, b1 := d*float32(sc1), dmin*float32(m1)
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l, q := range qs[32*c : 32*c+32] {
				lo[l] = a0*float32(q&15) - b0
				hi[l] = a1*float32(q>>4) - b1
			}
		}
	}
}

// q4kScaleMin unpacks sub-block j's 6-bit scale and min (quant.Q4KScaleMin).
func q4kScaleMin(s []byte, j int) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// dequantRowQ6K writes the len(dst) weights of the q6k row src, as quant.DequantizeRowQ6K.
func dequantRowQ6K(dst []float32, src []byte) {
	tab := f16Table()
	for b := 0; b < len(dst)/superBlock; b++ {
		blk := src[b*q6kBlockBytes : (b+1)*q6kBlockBytes]
		y := dst[b*superBlock : (b+1)*superBlock]
		d := tab[binary.LittleEndian.Uint16(blk[208:])]
		var a [16]float32
		for j := range a {
			a[j] = d * float32(int8(blk[192+j]))
		}
		for h := 0; h < 2; h++ {
			ql, qh := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32]
			yh := y[128*h : 128*h+128]
			for l := 0; l < 32; l++ {
				s := 8*h + l/16
				yh[l] = a[s] * float32(int32(ql[l]&15|qh[l]&3<<4)-32)
				yh[l+32] = a[s+2] * float32(int32(ql[l+32]&15|qh[l]>>2&3<<4)-32)
				yh[l+64] = a[s+4] * float32(int32(ql[l]>>4|qh[l]>>4&3<<4)-32)
				yh[l+96] = a[s+6] * float32(int32(ql[l+32]>>4|qh[l]>>6<<4)-32)
			}
		}
	}
}

// kPanelFloats bounds the dequantized panel of the float product: 64 KiB of float32 stays in
// L2 while the GEMM's token tiles sweep it.
const kPanelFloats = 16 << 10

// kPool lends the panels and the [n, panel rows] results of the float products.
var kPool = sync.Pool{New: func() any { return new([]float32) }}

func kFloats(n int) *[]float32 {
	p := kPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// MatMulQ4KFloat computes y[t*ldy+r] = Σ_c x[t*cols+c]·W[r,c] for t < n, r < rows, with W the
// q4k matrix w of rows x cols weights dequantized as quant.DequantizeRowQ4K defines it. A row
// range [lo, hi) of a larger matrix is y[lo:] with ldy = the full row count, w from row lo and
// rows = hi-lo.
func MatMulQ4KFloat(y []float32, ldy int, x []float32, n int, w []byte, rows, cols int) {
	checkK("MatMulQ4KFloat", q4kBlockBytes, len(w), rows, cols)
	matMulKFloat(y, ldy, x, n, w, rows, cols, q4kBlockBytes, dequantRowQ4K)
}

// MatMulQ6KFloat is MatMulQ4KFloat for q6k weights.
func MatMulQ6KFloat(y []float32, ldy int, x []float32, n int, w []byte, rows, cols int) {
	checkK("MatMulQ6KFloat", q6kBlockBytes, len(w), rows, cols)
	matMulKFloat(y, ldy, x, n, w, rows, cols, q6kBlockBytes, dequantRowQ6K)
}

// matMulKFloat dequantizes panels of rows and multiplies each with every token by the float32
// GEMM, scattering the [n, panel] result into y.
func matMulKFloat(y []float32, ldy int, x []float32, n int, w []byte, rows, cols, blockBytes int, deq func(dst []float32, src []byte)) {
	checkQ("MatMulKFloat", len(y), ldy, n, rows)
	if len(x) < n*cols {
		panic(fmt.Sprintf("kernels: x has %d values, want n*cols = %d*%d", len(x), n, cols))
	}
	if n == 0 || rows == 0 {
		return
	}
	rb := cols / superBlock * blockBytes
	pr := max(1, min(rows, kPanelFloats/cols))
	pp := kFloats(pr * cols)
	panel := *pp
	var tp *[]float32
	var tmp []float32
	if n > 1 {
		tp = kFloats(n * pr)
		tmp = *tp
	}
	for r0 := 0; r0 < rows; r0 += pr {
		m := min(pr, rows-r0)
		for r := 0; r < m; r++ {
			deq(panel[r*cols:(r+1)*cols], w[(r0+r)*rb:(r0+r+1)*rb])
		}
		if n == 1 {
			matMulF32Rows(y[r0:r0+m], x[:cols], panel[:m*cols], 1, m, cols, 0, m)
			continue
		}
		matMulF32Rows(tmp[:n*m], x[:n*cols], panel[:m*cols], n, m, cols, 0, m)
		for t := 0; t < n; t++ {
			copy(y[t*ldy+r0:t*ldy+r0+m], tmp[t*m:(t+1)*m])
		}
	}
	kPool.Put(pp)
	if tp != nil {
		kPool.Put(tp)
	}
}

// MatMulQ4KActs multiplies the a.N() quantized tokens of a by the q4k matrix w of rows x
// a.Cols() weights: y[t*ldy+r] = Σ_c dequant(a)[t,c]·W[r,c], in the integer form the package
// comment gives. A row range is passed as for MatMulQ4KFloat.
func MatMulQ4KActs(y []float32, ldy int, a *Int8Acts, w []byte, rows int) {
	n, cols := a.n, a.cols
	checkK("MatMulQ4KActs", q4kBlockBytes, len(w), rows, cols)
	checkQ("MatMulQ4KActs", len(y), ldy, n, rows)
	rb := cols / superBlock * q4kBlockBytes
	tab := f16Table()
	for t := 0; t < n; t++ {
		xq := a.q[t*cols : (t+1)*cols]
		da, bs := a.d[t*a.nb:(t+1)*a.nb], a.bs[t*a.nb:(t+1)*a.nb]
		for r := 0; r < rows; r++ {
			row := w[r*rb : (r+1)*rb]
			var acc float32
			for b := 0; b < cols/superBlock; b++ {
				blk := row[b*q4kBlockBytes : (b+1)*q4kBlockBytes]
				d, dmin := tab[binary.LittleEndian.Uint16(blk)], tab[binary.LittleEndian.Uint16(blk[2:])]
				qs := blk[16:]
				for c := 0; c < 4; c++ {
					x0 := xq[b*superBlock+64*c : b*superBlock+64*c+32]
					x1 := xq[b*superBlock+64*c+32 : b*superBlock+64*c+64]
					var i0, i1 int32
					for l, q := range qs[32*c : 32*c+32] {
						i0 += int32(q&15) * int32(x0[l])
						i1 += int32(q>>4) * int32(x1[l])
					}
					j := b*8 + 2*c // the activation block of sub-block 2c
					sc0, m0 := q4kScaleMin(blk[4:16], 2*c)
					sc1, m1 := q4kScaleMin(blk[4:16], 2*c+1)
					acc += (d*float32(sc0))*(da[j]*float32(i0)) - (dmin*float32(m0))*bs[j]
					acc += (d*float32(sc1))*(da[j+1]*float32(i1)) - (dmin*float32(m1))*bs[j+1]
				}
			}
			y[t*ldy+r] = acc
		}
	}
}

// MatMulQ6KActs is MatMulQ4KActs for q6k weights.
func MatMulQ6KActs(y []float32, ldy int, a *Int8Acts, w []byte, rows int) {
	n, cols := a.n, a.cols
	checkK("MatMulQ6KActs", q6kBlockBytes, len(w), rows, cols)
	checkQ("MatMulQ6KActs", len(y), ldy, n, rows)
	rb := cols / superBlock * q6kBlockBytes
	tab := f16Table()
	for t := 0; t < n; t++ {
		xq := a.q[t*cols : (t+1)*cols]
		da := a.d[t*a.nb : (t+1)*a.nb]
		for r := 0; r < rows; r++ {
			row := w[r*rb : (r+1)*rb]
			var acc float32
			for b := 0; b < cols/superBlock; b++ {
				blk := row[b*q6kBlockBytes : (b+1)*q6kBlockBytes]
				d := tab[binary.LittleEndian.Uint16(blk[208:])]
				var sum [16]int32 // Σ (q−32)·qa per sub-block of 16
				xb := xq[b*superBlock : (b+1)*superBlock]
				for h := 0; h < 2; h++ {
					ql, qh := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32]
					xh := xb[128*h : 128*h+128]
					for l := 0; l < 32; l++ {
						s := 8*h + l/16
						sum[s] += (int32(ql[l]&15|qh[l]&3<<4) - 32) * int32(xh[l])
						sum[s+2] += (int32(ql[l+32]&15|qh[l]>>2&3<<4) - 32) * int32(xh[l+32])
						sum[s+4] += (int32(ql[l]>>4|qh[l]>>4&3<<4) - 32) * int32(xh[l+64])
						sum[s+6] += (int32(ql[l+32]>>4|qh[l]>>6<<4) - 32) * int32(xh[l+96])
					}
				}
				for k := 0; k < 8; k++ {
					i := int32(int8(blk[192+2*k]))*sum[2*k] + int32(int8(blk[193+2*k]))*sum[2*k+1]
					acc += (d * da[b*8+k]) * float32(i)
				}
			}
			y[t*ldy+r] = acc
		}
	}
}

// MatVecQ4K computes y = W·x for one token with the q4k matrix w of rows x cols weights (the
// integer form, x quantized by a pooled Int8Acts); MatMulQ4K does n tokens, choosing the form
// by KFloatActs. Models quantize each input once and call the Acts or Float forms.
func MatVecQ4K(y []float32, w []byte, x []float32, rows, cols int) {
	MatMulQ4K(y, x, w, 1, rows, cols)
}

// MatMulQ4K computes y[t*rows+r] = Σ_c x[t*cols+c]·W[r,c] for n tokens (see MatVecQ4K).
func MatMulQ4K(y, x []float32, w []byte, n, rows, cols int) {
	matMulK(y, x, w, n, rows, cols, MatMulQ4KFloat, MatMulQ4KActs)
}

// MatVecQ6K is MatVecQ4K for q6k weights.
func MatVecQ6K(y []float32, w []byte, x []float32, rows, cols int) {
	MatMulQ6K(y, x, w, 1, rows, cols)
}

// MatMulQ6K is MatMulQ4K for q6k weights.
func MatMulQ6K(y, x []float32, w []byte, n, rows, cols int) {
	matMulK(y, x, w, n, rows, cols, MatMulQ6KFloat, MatMulQ6KActs)
}

func matMulK(y, x []float32, w []byte, n, rows, cols int,
	float func([]float32, int, []float32, int, []byte, int, int), acts func([]float32, int, *Int8Acts, []byte, int)) {
	if n < 0 || rows < 0 || len(x) < n*cols || len(y) < n*rows {
		panic(fmt.Sprintf("kernels: a super-block product of %d tokens, %d rows, %d cols with x of %d and y of %d values", n, rows, cols, len(x), len(y)))
	}
	if KFloatActs(n) {
		float(y, rows, x, n, w, rows, cols)
		return
	}
	a := actsPool.Get().(*Int8Acts)
	a.Quantize(x, n, cols)
	acts(y, rows, a, w, rows)
	actsPool.Put(a)
}
