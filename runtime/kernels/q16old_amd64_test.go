//go:build !noasm

package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The W8A8 q8 kernels of 2500f7d beside the W8A16 ones, for an in-process
// comparison only.

var q8W8A8VNNIPanels = [q16Tokens][2]func(y []float32, ldy int, x []byte, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int){
	{q8W8A8VNNIT1R1, q8W8A8VNNIT1R2}, {q8W8A8VNNIT2R1, q8W8A8VNNIT2R2}, {q8W8A8VNNIT3R1, q8W8A8VNNIT3R2}, {q8W8A8VNNIT4R1, q8W8A8VNNIT4R2},
}

// oldLayout is Int8Acts' former q8 layout.
func oldLayout(a *Int8Acts) []byte {
	nw := a.cols / 32
	out := make([]byte, a.n*nw*64)
	for t := 0; t < a.n; t++ {
		q := a.q[t*a.cols:]
		for b := 0; b < nw; b++ {
			blk := out[(t*nw+b)*64:]
			for i := 0; i < 32; i++ {
				blk[i] = byte(q[32*b+i])
			}
			for l := 0; l < 8; l++ {
				e := 32*b + 4*l
				s := int32(q[e]) + int32(q[e+1]) + int32(q[e+2]) + int32(q[e+3])
				binary.LittleEndian.PutUint32(blk[32+4*l:], uint32(-128*s))
			}
		}
	}
	return out
}

func matMulQ8Old(y []float32, ldy int, a *Int8Acts, lay []byte, w []int8, scale []uint16, rows int) {
	cols := a.cols
	k := cols &^ 31
	rb := rows
	if a.n > 1 {
		rb = blockRows(cols) / q16Rows * q16Rows
	}
	xs := (cols / 32) * 64
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		panels := (r1 - r0) / q16Rows
		for t := 0; t < a.n; t += q16Tokens {
			tt := min(q16Tokens, a.n-t)
			run := func(r, rr, np int) {
				q8W8A8VNNIPanels[tt-1][min(rr-1, 1)](y[t*ldy+r:], ldy, lay[t*xs:], xs, a.d[t*a.nb:], a.nb,
					w[r*cols:(r+rr*np)*cols], cols, scale[r:r+rr*np], k, np)
			}
			if panels > 0 {
				run(r0, q16Rows, panels)
			}
			if left := r1 - r0 - panels*q16Rows; left > 0 {
				run(r0+panels*q16Rows, 1, left)
			}
		}
	}
}

func TestQ8Old(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a Int8Acts
	for _, n := range []int{1, 3, 9} {
		const rows, cols = 17, 896
		m := newQ8(r, rows, cols, false, 0)
		a.Quantize(randActs(r, n, cols, false), n, cols)
		ref, mag := qRef(m, dequantActs(&a), n)
		y := nanSlice(n * rows)
		matMulQ8Old(y, rows, &a, oldLayout(&a), m.w8, m.scale, rows)
		checkQClose(t, fmt.Sprint("old ", n), y, rows, ref, mag, n, rows, cols, false)
	}
}

// BenchmarkQ8OldNew: W8A8 (old) and W8A16 (new) q8 VNNI kernels, GEMV hot
// and streamed, GEMM n=128, one thread.
func BenchmarkQ8OldNew(b *testing.B) {
	x := benchVec(benchTokens * 4864)
	y := make([]float32, benchTokens*4864)
	var a8 Int8Acts
	var a16 Int16Acts
	for _, s := range qBenchShapes[:4] {
		for _, mode := range []string{"hot", "stream", "gemm"} {
			n := 1
			if mode == "gemm" {
				n = benchTokens
			}
			a8.Quantize(x[:n*s.cols], n, s.cols)
			a16.Quantize(x[:n*s.cols], n, s.cols)
			lay := oldLayout(&a8)
			count := 1
			if mode == "stream" {
				count = max(1, int(benchStreamBytes/int64(s.rows*s.cols)))
			}
			ms := benchMatrices(s.rows, s.cols, 0, count)
			for _, k := range []string{"old", "new"} {
				b.Run(fmt.Sprintf("%s/%s/%s", s.name, mode, k), func(b *testing.B) {
					b.SetBytes(ms[0].bytes())
					i := 0
					for b.Loop() {
						m := ms[i%len(ms)]
						i++
						if k == "old" {
							matMulQ8Old(y, s.rows, &a8, lay, m.w8, m.scale, s.rows)
						} else {
							matMulQ8Fast(y, s.rows, &a16, m.w8, m.scale, s.rows)
						}
					}
					reportGFLOPS(b, 2*float64(n*s.rows*s.cols))
				})
			}
		}
	}
}
