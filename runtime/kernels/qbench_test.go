package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// The quantized benchmarks use the decode shapes of Qwen2.5-0.5B: q/o
// (896x896), k/v (128x896), gate/up (4864x896), down (896x4864) and the
// tied embedding / LM head (151936x896). GEMV rotates through enough copies
// of each matrix to total benchStreamBytes, far more than any L3, as decode
// does with the layers of a real model; SetBytes counts the weight bytes
// read (data plus fp16 scales and offsets), so MB/s is the weight streaming
// rate. GEMM uses one matrix (it stays in cache) and n = benchTokens.
var qBenchShapes = []struct {
	name       string
	rows, cols int
}{{"896x896", 896, 896}, {"128x896", 128, 896}, {"4864x896", 4864, 896}, {"896x4864", 896, 4864}, {"151936x896", 151936, 896}}

const benchStreamBytes = 192 << 20

// qBenchFormats are the weight formats compared: fp16 (the existing
// MatVecF16/MatMulF16), q8 (times int16 activations, MatMulQ8Acts), q8f
// (q8 times float activations, MatMulQ8Float: the GEMM only), q4 with
// groups of 32 and 64 (times int8 activations, MatMulQ4Acts), and q4f (q4
// times float activations, MatMulQ4Float: the GEMM only).
var qBenchFormats = []struct {
	name  string
	group int // 0: q8; -1: fp16; -2: q8 with float activations; -G: q4 with float activations
}{{"f16", -1}, {"q8", 0}, {"q8f", -2}, {"q4g32", 32}, {"q4g64", 64}, {"q4fg32", -32}, {"q4fg64", -64}}

// benchMatrix is one weight matrix in one format.
type benchMatrix struct {
	f16           []uint16
	w8            []int8
	w4            []byte
	scale, offset []uint16
}

func (m benchMatrix) bytes() int64 {
	return int64(2*len(m.f16) + len(m.w8) + len(m.w4) + 2*len(m.scale) + 2*len(m.offset))
}

// benchMatrices makes count copies of a rows x cols matrix in the format
// group names (copies share nothing, so rotating through them streams).
func benchMatrices(rows, cols, group, count int) []benchMatrix {
	if group < -2 {
		group = -group // q4 with float activations: the same matrix
	}
	r := rand.New(rand.NewPCG(5, 5))
	w := randW(r, min(rows, 256), cols) // one block of rows, repeated
	var proto benchMatrix
	switch {
	case group == -1:
		proto.f16 = make([]uint16, len(w))
		half.F32ToF16(proto.f16, w)
	case group == 0 || group == -2:
		proto.w8, proto.scale = make([]int8, len(w)), make([]uint16, len(w)/cols)
		if err := quant.QuantizeQ8(proto.w8, proto.scale, w, len(w)/cols, cols); err != nil {
			panic(err)
		}
	default:
		n := len(w) / group
		proto.w4, proto.scale, proto.offset = make([]byte, len(w)/2), make([]uint16, n), make([]uint16, n)
		if err := quant.QuantizeQ4(proto.w4, proto.scale, proto.offset, w, len(w)/cols, cols, group); err != nil {
			panic(err)
		}
	}
	tile := func(dst, src []uint16) []uint16 {
		for i := 0; i < len(dst); i += len(src) {
			copy(dst[i:], src)
		}
		return dst
	}
	ms := make([]benchMatrix, count)
	for i := range ms {
		m := &ms[i]
		switch {
		case group == -1:
			m.f16 = tile(make([]uint16, rows*cols), proto.f16)
		case group == 0 || group == -2:
			m.w8 = make([]int8, rows*cols)
			for j := 0; j < len(m.w8); j += len(proto.w8) {
				copy(m.w8[j:], proto.w8)
			}
			m.scale = tile(make([]uint16, rows), proto.scale)
		default:
			m.w4 = make([]byte, rows*cols/2)
			for j := 0; j < len(m.w4); j += len(proto.w4) {
				copy(m.w4[j:], proto.w4)
			}
			m.scale = tile(make([]uint16, rows*cols/group), proto.scale)
			m.offset = tile(make([]uint16, rows*cols/group), proto.offset)
		}
	}
	return ms
}

// runRows computes output rows [lo, hi) of y = m · x for the quantized
// formats (through a or a16, the quantized x) and for fp16 (through xf),
// the way a caller splits a product over a Pool: by slicing the row range.
func runRows(y []float32, ldy int, m benchMatrix, a *Int8Acts, a16 *Int16Acts, xf []float32, group, n, rows, cols, lo, hi int) {
	switch {
	case group < -2:
		g := -cols / group
		MatMulQ4Float(y[lo:], ldy, xf, n, m.w4[lo*cols/2:hi*cols/2], m.scale[lo*g:hi*g], m.offset[lo*g:hi*g], -group, hi-lo, cols)
	case group == -2:
		MatMulQ8Float(y[lo:], ldy, xf, n, m.w8[lo*cols:hi*cols], m.scale[lo:hi], hi-lo, cols)
	case group == -1:
		if n == 1 {
			MatVecF16(y[lo:hi], m.f16[lo*cols:hi*cols], xf, hi-lo, cols)
		} else {
			matMulF16Rows(y, xf, m.f16, n, rows, cols, lo, hi)
		}
	case group == 0:
		MatMulQ8Acts(y[lo:], ldy, a16, m.w8[lo*cols:hi*cols], m.scale[lo:hi], hi-lo)
	default:
		g := cols / group
		MatMulQ4Acts(y[lo:], ldy, a, m.w4[lo*cols/2:hi*cols/2], m.scale[lo*g:hi*g], m.offset[lo*g:hi*g], group, hi-lo)
	}
}

// BenchmarkQuantGEMV compares the decode matrix-vector product of every
// format on every shape: "hot" repeats one matrix (in cache when it fits:
// the kernel's compute ceiling), "stream" rotates through the copies on 1
// and 2 threads (rows split over a Pool), the decode case.
func BenchmarkQuantGEMV(b *testing.B) {
	x := benchVec(4864)
	var a Int8Acts
	var a16 Int16Acts
	y := make([]float32, 151936)
	for _, s := range qBenchShapes {
		a.Quantize(x[:s.cols], 1, s.cols)
		a16.Quantize(x[:s.cols], 1, s.cols)
		for _, f := range qBenchFormats {
			if f.group < -1 {
				continue // a GEMM kernel
			}
			one := benchMatrices(s.rows, s.cols, f.group, 1)
			count := max(1, int(benchStreamBytes/one[0].bytes()))
			ms := append(one, benchMatrices(s.rows, s.cols, f.group, count-1)...)
			for _, mode := range []string{"hot/threads=1", "stream/threads=1", "stream/threads=2"} {
				threads := 1
				if mode == "stream/threads=2" {
					threads = 2
				}
				p := NewPool(threads)
				var cur benchMatrix
				body := func(lo, hi int) { runRows(y, s.rows, cur, &a, &a16, x[:s.cols], f.group, 1, s.rows, s.cols, lo, hi) }
				b.Run(fmt.Sprintf("%s/%s/%s", s.name, f.name, mode), func(b *testing.B) {
					b.SetBytes(ms[0].bytes())
					i := 0
					for b.Loop() {
						cur = ms[i%len(ms)]
						if mode != "hot/threads=1" {
							i++
						}
						p.Parallel(s.rows, p.rowGrain(s.rows, 4, 64), body)
					}
					b.ReportMetric(float64(s.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
				p.Close()
			}
		}
	}
}

// BenchmarkQuantGEMM compares the prefill matrix product (n = benchTokens)
// of every format; the activations are quantized outside the timed loop
// (BenchmarkQuantizeActs measures that, once per input shared by q/k/v or
// gate/up).
func BenchmarkQuantGEMM(b *testing.B) {
	x := benchVec(benchTokens * 4864)
	y := make([]float32, benchTokens*4864)
	var a Int8Acts
	var a16 Int16Acts
	for _, s := range qBenchShapes[:4] {
		a.Quantize(x[:benchTokens*s.cols], benchTokens, s.cols)
		a16.Quantize(x[:benchTokens*s.cols], benchTokens, s.cols)
		for _, f := range qBenchFormats {
			m := benchMatrices(s.rows, s.cols, f.group, 1)[0]
			for _, threads := range []int{1, 2} {
				p := NewPool(threads)
				body := func(lo, hi int) {
					runRows(y, s.rows, m, &a, &a16, x[:benchTokens*s.cols], f.group, benchTokens, s.rows, s.cols, lo, hi)
				}
				b.Run(fmt.Sprintf("%s/%s/n=%d/threads=%d", s.name, f.name, benchTokens, threads), func(b *testing.B) {
					b.SetBytes(m.bytes())
					for b.Loop() {
						p.Parallel(s.rows, p.rowGrain(s.rows, 12, 12), body)
					}
					reportGFLOPS(b, 2*float64(benchTokens*s.rows*s.cols))
				})
				p.Close()
			}
		}
	}
}

// BenchmarkQuantizeActs measures Int8Acts.Quantize (int8) and
// Int16Acts.Quantize (int16) on one token of each input width and on a
// prefill batch.
func BenchmarkQuantizeActs(b *testing.B) {
	x := benchVec(benchTokens * 4864)
	var a Int8Acts
	var a16 Int16Acts
	for _, c := range []struct{ n, cols int }{{1, 896}, {1, 4864}, {benchTokens, 896}} {
		b.Run(fmt.Sprintf("int8/n=%d/cols=%d", c.n, c.cols), func(b *testing.B) {
			b.SetBytes(int64(4 * c.n * c.cols))
			for b.Loop() {
				a.Quantize(x[:c.n*c.cols], c.n, c.cols)
			}
		})
		b.Run(fmt.Sprintf("int16/n=%d/cols=%d", c.n, c.cols), func(b *testing.B) {
			b.SetBytes(int64(4 * c.n * c.cols))
			for b.Loop() {
				a16.Quantize(x[:c.n*c.cols], c.n, c.cols)
			}
		})
	}
}

// BenchmarkQ8Batch finds the token count from which the q8 float-activation
// GEMM (q8f, MatMulQ8Float) beats the W8A16 kernels (q8, Int16Acts.Quantize
// + MatMulQ8Acts, the quantization timed too as a model does it once per
// input): n = 1..8 tokens, 2 threads, weights streamed from DRAM as a
// model's layers are (rotating through benchStreamBytes of copies). Each
// kernel alternates with the other within one benchmark run so that the
// load of a shared machine hits both alike; it reports rows/s of each.
func BenchmarkQ8Batch(b *testing.B) {
	var a16 Int16Acts
	benchBatchCrossover(b, "q8", 0, a16.Quantize, func(y []float32, m benchMatrix, xs []float32, float bool, n, rows, cols, lo, hi int) {
		if float {
			runRows(y, rows, m, nil, nil, xs, -2, n, rows, cols, lo, hi)
		} else {
			runRows(y, rows, m, nil, &a16, xs, 0, n, rows, cols, lo, hi)
		}
	})
}

// BenchmarkQ4Batch finds the token count from which the q4 float-activation
// GEMM (q4f, MatMulQ4Float) beats the W4A8 kernels (q4, Int8Acts.Quantize +
// MatMulQ4Acts, the quantization timed too as a model does it once per
// input), as BenchmarkQ8Batch does for q8: groups of 64, n = 1..8 tokens, 2
// threads, weights streamed from DRAM, the two alternating within one run.
func BenchmarkQ4Batch(b *testing.B) {
	const group = 64
	var a Int8Acts
	benchBatchCrossover(b, "q4", group, a.Quantize, func(y []float32, m benchMatrix, xs []float32, float bool, n, rows, cols, lo, hi int) {
		if float {
			runRows(y, rows, m, nil, nil, xs, -group, n, rows, cols, lo, hi)
		} else {
			runRows(y, rows, m, &a, nil, xs, group, n, rows, cols, lo, hi)
		}
	})
}

// benchBatchCrossover is BenchmarkQ8Batch and BenchmarkQ4Batch: for the first four shapes and
// n = 1..8 tokens it alternates quantize + run(float = false), the kernel on quantized
// activations, with run(float = true), the float-activation one, on 2 threads over weights of
// groups of `group` (0: per row) streamed from DRAM, and reports each one's rows/s and their
// time ratio under the names kind and kind+"f".
func benchBatchCrossover(b *testing.B, kind string, group int, quantize func(x []float32, n, cols int),
	run func(y []float32, m benchMatrix, xs []float32, float bool, n, rows, cols, lo, hi int)) {
	x := benchVec(8 * 4864)
	y := make([]float32, 8*4864)
	p := NewPool(2)
	defer p.Close()
	for _, s := range qBenchShapes[:4] {
		one := benchMatrices(s.rows, s.cols, group, 1)
		ms := append(one, benchMatrices(s.rows, s.cols, group, max(1, int(benchStreamBytes/one[0].bytes()))-1)...)
		for n := 1; n <= 8; n++ {
			b.Run(fmt.Sprintf("%s/n=%d", s.name, n), func(b *testing.B) {
				var cur benchMatrix
				xs := x[:n*s.cols]
				quant := func(lo, hi int) { run(y, cur, xs, false, n, s.rows, s.cols, lo, hi) }
				float := func(lo, hi int) { run(y, cur, xs, true, n, s.rows, s.cols, lo, hi) }
				var tq, tf time.Duration
				i := 0
				for b.Loop() {
					cur = ms[i%len(ms)]
					i++
					t0 := time.Now()
					quantize(xs, n, s.cols)
					p.Parallel(s.rows, p.rowGrain(s.rows, 12, 12), quant)
					t1 := time.Now()
					cur = ms[i%len(ms)]
					i++
					p.Parallel(s.rows, p.rowGrain(s.rows, 12, 12), float)
					tq, tf = tq+t1.Sub(t0), tf+time.Since(t1)
				}
				b.ReportMetric(float64(s.rows)*float64(b.N)/tq.Seconds(), kind+"-rows/s")
				b.ReportMetric(float64(s.rows)*float64(b.N)/tf.Seconds(), kind+"f-rows/s")
				b.ReportMetric(tq.Seconds()/tf.Seconds(), kind+"/"+kind+"f-time")
			})
		}
	}
}
