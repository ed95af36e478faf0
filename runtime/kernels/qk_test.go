package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// kMat is a q4k or q6k matrix with its dequantized values and, per weight, the magnitude its
// float32 evaluation rounds at (|a·q| + |b| for q4k's a·q − b, |w| for q6k).
type kMat struct {
	dt         dtype.DType
	rows, cols int
	w          []byte
	deq, mag   []float32
}

// newK quantizes random weights (or, with raw set, fills the super-blocks with random bytes
// under sane fp16 steps, so every code and scale occurs).
func newK(r *rand.Rand, dt dtype.DType, rows, cols int, raw bool) kMat {
	rb, err := quant.KRowBytes(dt, cols)
	if err != nil {
		panic(err)
	}
	m := kMat{dt: dt, rows: rows, cols: cols, w: make([]byte, rows*rb), deq: make([]float32, rows*cols), mag: make([]float32, rows*cols)}
	if raw {
		for i := range m.w {
			m.w[i] = byte(r.Uint32())
		}
		for b := 0; b < len(m.w)/dt.BlockBytes(); b++ {
			blk := m.w[b*dt.BlockBytes():]
			if dt == dtype.Q4K {
				binary.LittleEndian.PutUint16(blk, half.F32ToF16Scalar(float32(r.Float64()*1e-3)))
				binary.LittleEndian.PutUint16(blk[2:], half.F32ToF16Scalar(float32(r.Float64()*1e-2)))
			} else {
				binary.LittleEndian.PutUint16(blk[208:], half.F32ToF16Scalar(float32((r.Float64()-0.5)*1e-3)))
			}
		}
	} else {
		src := make([]byte, 4*rows*cols)
		for i, v := range randW(r, rows, cols) {
			binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(v))
		}
		from := quant.QuantizeQ4KFrom
		if dt == dtype.Q6K {
			from = quant.QuantizeQ6KFrom
		}
		if err := from(m.w, src, dtype.F32, rows, cols, nil); err != nil {
			panic(err)
		}
	}
	deq := quant.DequantizeQ4K
	if dt == dtype.Q6K {
		deq = quant.DequantizeQ6K
	}
	if err := deq(m.deq, m.w, rows, cols); err != nil {
		panic(err)
	}
	for i := range m.mag {
		m.mag[i] = float32(math.Abs(float64(m.deq[i])))
		if dt == dtype.Q4K {
			blk := m.w[i/cols*rb+i%cols/superBlock*q4kBlockBytes:]
			sc, mm := quant.Q4KScaleMin(blk[4:16], i%superBlock/32)
			d := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk))
			dmin := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk[2:]))
			m.mag[i] = d*float32(sc)*15 + dmin*float32(mm)
		}
	}
	return m
}

// kRef returns the float64 product of the dequantized weights with x and the magnitude of each
// output's terms.
func kRef(m kMat, x []float32, n int) (ref, mag []float64) {
	ref, mag = make([]float64, n*m.rows), make([]float64, n*m.rows)
	for t := 0; t < n; t++ {
		for r := 0; r < m.rows; r++ {
			var s, a float64
			for c := 0; c < m.cols; c++ {
				xv := float64(x[t*m.cols+c])
				s += xv * float64(m.deq[r*m.cols+c])
				a += math.Abs(xv) * float64(m.mag[r*m.cols+c])
			}
			ref[t*m.rows+r], mag[t*m.rows+r] = s, a
		}
	}
	return ref, mag
}

func TestDequantRowKMatchesQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, dt := range []dtype.DType{dtype.Q4K, dtype.Q6K} {
		for _, raw := range []bool{false, true} {
			m := newK(r, dt, 4, 768, raw)
			got := make([]float32, m.rows*m.cols)
			rb := len(m.w) / m.rows
			for row := 0; row < m.rows; row++ {
				if dt == dtype.Q4K {
					dequantRowQ4K(got[row*m.cols:(row+1)*m.cols], m.w[row*rb:])
				} else {
					dequantRowQ6K(got[row*m.cols:(row+1)*m.cols], m.w[row*rb:])
				}
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(m.deq[i]) {
					t.Fatalf("%s raw=%v: weight %d = %g, quant says %g", dt, raw, i, got[i], m.deq[i])
				}
			}
		}
	}
}

// TestMatMulK holds both product forms of both types to the float64 reference on shapes around
// the panel (one to many rows per panel) and token counts, with strided outputs and row ranges.
func TestMatMulK(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, dt := range []dtype.DType{dtype.Q4K, dtype.Q6K} {
		for _, cols := range []int{256, 512, 1280, 4864} {
			for _, rows := range []int{1, 2, 3, 5, 17} {
				for _, n := range []int{1, 2, 3, 7} {
					raw := (rows+n)%2 == 0
					m := newK(r, dt, rows, cols, raw)
					x := randActs(r, n, cols, false)
					name := fmt.Sprintf("%s %dx%d n=%d raw=%v", dt, rows, cols, n, raw)
					ref, mag := kRef(m, x, n)
					pad := 3
					float, acts := MatMulQ4KFloat, MatMulQ4KActs
					if dt == dtype.Q6K {
						float, acts = MatMulQ6KFloat, MatMulQ6KActs
					}
					y := nanSlice(n * (rows + pad))
					float(y, rows+pad, x, n, m.w, rows, cols)
					checkQClose(t, "float "+name, y, rows+pad, ref, mag, n, rows, cols, false)

					var a Int8Acts
					a.Quantize(x, n, cols)
					aref, amag := kRef(m, dequantActs(&a), n)
					y = nanSlice(n * (rows + pad))
					acts(y, rows+pad, &a, m.w, rows)
					checkQClose(t, "acts "+name, y, rows+pad, aref, amag, n, rows, cols, false)

					// The convenience form picks one of the two.
					y = nanSlice(n * rows)
					if dt == dtype.Q4K {
						MatMulQ4K(y, x, m.w, n, rows, cols)
					} else {
						MatMulQ6K(y, x, m.w, n, rows, cols)
					}
					if KFloatActs(n) {
						checkQClose(t, "MatMul "+name, y, rows, ref, mag, n, rows, cols, false)
					} else {
						checkQClose(t, "MatMul "+name, y, rows, aref, amag, n, rows, cols, false)
					}

					// A row range writes exactly its rows.
					lo, hi := rows/3, rows-rows/4
					rb := len(m.w) / rows
					y = nanSlice(n * rows)
					float(y[lo:], rows, x, n, m.w[lo*rb:hi*rb], hi-lo, cols)
					checkRange(t, "float range "+name, y, ref, mag, n, rows, cols, lo, hi, false)
					y = nanSlice(n * rows)
					acts(y[lo:], rows, &a, m.w[lo*rb:hi*rb], hi-lo)
					checkRange(t, "acts range "+name, y, aref, amag, n, rows, cols, lo, hi, false)
				}
			}
		}
	}
}

// TestMatMulKNaN: a NaN activation reaches every output of its token, in both forms.
func TestMatMulKNaN(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	m := newK(r, dtype.Q4K, 4, 512, false)
	x := randActs(r, 2, 512, false)
	x[512+100] = float32(math.NaN())
	y := make([]float32, 8)
	MatMulQ4KFloat(y, 4, x, 2, m.w, 4, 512)
	for i, v := range y {
		if math.IsNaN(float64(v)) != (i >= 4) {
			t.Fatalf("float: y[%d] = %g", i, v)
		}
	}
	var a Int8Acts
	a.Quantize(x, 2, 512)
	MatMulQ4KActs(y, 4, &a, m.w, 4)
	for i, v := range y {
		if math.IsNaN(float64(v)) != (i >= 4) {
			t.Fatalf("acts: y[%d] = %g", i, v)
		}
	}
}

func TestMatMulKPanics(t *testing.T) {
	w := make([]byte, 2*q4kBlockBytes)
	x := make([]float32, 512)
	y := make([]float32, 2)
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"cols 896", "896", func() { MatMulQ4KFloat(y, 1, x, 1, w, 1, 896) }},
		{"short w", "w has", func() { MatMulQ6KFloat(y, 1, x, 1, w, 2, 512) }},
		{"short y", "y has", func() { MatMulQ4KFloat(y[:1], 1, x, 1, w, 2, 256) }},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) {
					t.Errorf("%s: panic %q, want one mentioning %q", tc.name, msg, tc.want)
				}
			}()
			tc.f()
		}()
	}
}
