//go:build !noasm

package kernels

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Design (b) of the q8 kernels on VNNI, for measurement only: two int8
// planes and VPDPBUSD instead of int16 and VPDPWSSD.

var q8P16VNNIPanels = [q16Tokens][2]func(y []float32, ldy int, x []byte, xstride int, d []float32, dstride int, w []int8, cols int, scale []uint16, k, panels int){
	{q8P16VNNIT1R1, q8P16VNNIT1R2}, {q8P16VNNIT2R1, q8P16VNNIT2R2}, {q8P16VNNIT3R1, q8P16VNNIT3R2}, {q8P16VNNIT4R1, q8P16VNNIT4R2},
}

// planesVNNI lays a out for q8P16VNNI: per whole block q1, q2, lane biases.
func planesVNNI(a *Int16Acts) []byte {
	nw := a.cols / 32
	a.split()
	out := make([]byte, a.n*nw*96)
	for t := 0; t < a.n; t++ {
		for b := 0; b < nw; b++ {
			o := out[(t*nw+b)*96:]
			p := a.planes[(t*nw+b)*64:]
			for i := 0; i < 64; i++ {
				o[i] = byte(p[i])
			}
			for l := 0; l < 8; l++ {
				var s int32
				for _, v := range a.q[t*a.cols+32*b+4*l : t*a.cols+32*b+4*l+4] {
					s += int32(v)
				}
				binary.LittleEndian.PutUint32(o[64+4*l:], uint32(-128*s))
			}
		}
	}
	return out
}

func matMulQ8PlanesVNNI(y []float32, ldy int, a *Int16Acts, pl []byte, w []int8, scale []uint16, rows int) {
	cols := a.cols
	k := cols &^ 31
	rb := rows
	if a.n > 1 {
		rb = blockRows(cols) / q16Rows * q16Rows
	}
	xs := (cols / 32) * 96
	for r0 := 0; r0 < rows; r0 += rb {
		r1 := min(rows, r0+rb)
		panels := (r1 - r0) / q16Rows
		for t := 0; t < a.n; t += q16Tokens {
			tt := min(q16Tokens, a.n-t)
			run := func(r, rr, np int) {
				q8P16VNNIPanels[tt-1][min(rr-1, 1)](y[t*ldy+r:], ldy, pl[t*xs:], xs, a.d[t*a.nb:], a.nb,
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

func TestQ8PlanesVNNI(t *testing.T) {
	if !useVNNI {
		t.Skip("no VNNI")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var a Int16Acts
	for _, n := range []int{1, 3, 4, 9} {
		for _, rows := range []int{1, 5, 17} {
			const cols = 896
			m := newQ8(r, rows, cols, false, 0)
			a.Quantize(randActs(r, n, cols, false), n, cols)
			ref, mag := qRef(m, dequantActs16(&a), n)
			y := nanSlice(n * rows)
			matMulQ8PlanesVNNI(y, rows, &a, planesVNNI(&a), m.w8, m.scale, rows)
			checkQClose(t, fmt.Sprint("planes ", n, rows), y, rows, ref, mag, n, rows, cols, false)
		}
	}
}

// BenchmarkQ8Design compares the q8 kernels' two designs on VNNI: int16
// activations (VPMADDWD + VPDPWSSD, what runs) and two int8 planes
// (VPDPBUSD x 2 + combine).
func BenchmarkQ8Design(b *testing.B) {
	if !useVNNI {
		b.Skip("no VNNI")
	}
	x := benchVec(benchTokens * 4864)
	y := make([]float32, benchTokens*4864)
	var a Int16Acts
	for _, s := range qBenchShapes[:4] {
		for _, n := range []int{1, benchTokens} {
			a.Quantize(x[:n*s.cols], n, s.cols)
			pl := planesVNNI(&a)
			count := 1
			if n == 1 {
				count = max(1, int(benchStreamBytes/int64(s.rows*s.cols)))
			}
			ms := benchMatrices(s.rows, s.cols, 0, count)
			for _, design := range []string{"int16", "planes"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", s.name, n, design), func(b *testing.B) {
					b.SetBytes(ms[0].bytes())
					i := 0
					for b.Loop() {
						m := ms[i%len(ms)]
						i++
						if design == "int16" {
							matMulQ8Fast(y, s.rows, &a, m.w8, m.scale, s.rows)
						} else {
							matMulQ8PlanesVNNI(y, s.rows, &a, pl, m.w8, m.scale, s.rows)
						}
					}
					reportGFLOPS(b, 2*float64(n*s.rows*s.cols))
				})
			}
		}
	}
}
