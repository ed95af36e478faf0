package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/half"
)

// Benchmarks use the Qwen2.5-0.5B MLP shape: W is 4864 x 896 (gate/up) and
// the prefill batch is 128 tokens. "hot" reuses one matrix (it stays in
// L2/L3: compute-bound); "stream" rotates through 24 distinct matrices
// (209 MB fp16, far more than any L3), which is what decode does with the
// layers of a real model: DRAM-bound. SetBytes counts weight bytes read, so
// MB/s is the weight streaming rate; GFLOPS is reported as a metric.
const (
	benchRows   = 4864
	benchCols   = 896
	benchStream = 24
	benchTokens = 128
)

// benchWeights returns count matrices of fp16 weights N(0, 0.02) and their
// float32 twins when f32 is set, filled by repeating one random block.
func benchWeights(count int, f32 bool) ([][]uint16, [][]float32) {
	r := rand.New(rand.NewPCG(1, 1))
	block := make([]uint16, 1<<16+7)
	for i := range block {
		block[i] = half.F32ToF16Scalar(float32(r.NormFloat64() * 0.02))
	}
	w16 := make([][]uint16, count)
	var w32 [][]float32
	for i := range w16 {
		w16[i] = hugeUint16s(benchRows * benchCols)
		for j := 0; j < len(w16[i]); j += len(block) {
			copy(w16[i][j:], block)
		}
		if f32 {
			w := hugeFloats(len(w16[i]))
			half.F16ToF32(w, w16[i])
			w32 = append(w32, w)
		}
	}
	return w16, w32
}

func benchVec(n int) []float32 {
	r := rand.New(rand.NewPCG(2, 2))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func reportGFLOPS(b *testing.B, flopsPerOp float64) {
	b.ReportMetric(flopsPerOp*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

func BenchmarkMatVecF16(b *testing.B) {
	w16, _ := benchWeights(benchStream, false)
	x, y := benchVec(benchCols), make([]float32, benchRows)
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, mode := range []string{"hot", "stream"} {
			b.Run(fmt.Sprintf("%s/threads=%d", mode, threads), func(b *testing.B) {
				b.SetBytes(2 * benchRows * benchCols)
				i := 0
				for b.Loop() {
					w := w16[0]
					if mode == "stream" {
						w = w16[i%benchStream]
						i++
					}
					p.MatVecF16(y, w, x, benchRows, benchCols)
				}
				reportGFLOPS(b, 2*benchRows*benchCols)
			})
		}
		p.Close()
	}
	b.Run("hot/generic", func(b *testing.B) {
		b.SetBytes(2 * benchRows * benchCols)
		for b.Loop() {
			matVecF16Generic(y, w16[0], x, benchRows, benchCols, 0)
		}
		reportGFLOPS(b, 2*benchRows*benchCols)
	})
}

func BenchmarkMatVecF32(b *testing.B) {
	_, w32 := benchWeights(benchStream, true)
	x, y := benchVec(benchCols), make([]float32, benchRows)
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, mode := range []string{"hot", "stream"} {
			b.Run(fmt.Sprintf("%s/threads=%d", mode, threads), func(b *testing.B) {
				b.SetBytes(4 * benchRows * benchCols)
				i := 0
				for b.Loop() {
					w := w32[0]
					if mode == "stream" {
						w = w32[i%benchStream]
						i++
					}
					p.MatVecF32(y, w, x, benchRows, benchCols)
				}
				reportGFLOPS(b, 2*benchRows*benchCols)
			})
		}
		p.Close()
	}
}

// benchThreads returns the pool sizes the bandwidth benchmarks run with:
// $KERNELS_BENCH_THREADS (comma-separated, e.g. "1,2,8,16" on a 16-core
// machine; bench/thread_scaling.sh sets it), else 1 and 2.
func benchThreads(b *testing.B) []int {
	env := os.Getenv("KERNELS_BENCH_THREADS")
	if env == "" {
		return []int{1, 2}
	}
	var l []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("KERNELS_BENCH_THREADS=%q: %q is not a positive number", env, f)
		}
		l = append(l, n)
	}
	return l
}

// BenchmarkReadBandwidth is the yardstick for the GEMV: a read-only pass
// over 1 GiB (about one decode step of the full-size Qwen2.5-0.5B, and far
// more than any L3) in huge pages, split over the pool like the GEMV, for
// each of benchThreads. The pass is the float32 GEMV over the buffer as
// [rows, 1024] (one FMA per value read, far below what a core can do), so it
// reads as decode does, with decode's software prefetch where this CPU gets it
// (zPrefetch): a plain Sum without software prefetch read 8.3 GB/s on one
// Sapphire Rapids core, less than the f16 decode there streamed (9.4), which
// made the decode's share of this yardstick exceed 1.
func BenchmarkReadBandwidth(b *testing.B) {
	const cols = 1024
	buf := hugeFloats(256 << 20)
	for i := range buf {
		buf[i] = 1
	}
	rows := len(buf) / cols
	x, y := benchVec(cols), make([]float32, rows)
	for _, threads := range benchThreads(b) {
		p := NewPool(threads)
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			b.SetBytes(int64(4 * len(buf)))
			for b.Loop() {
				p.MatVecF32(y, buf, x, rows, cols)
			}
		})
		p.Close()
	}
}

func BenchmarkMatMulF16(b *testing.B) {
	w16, _ := benchWeights(1, false)
	shapes := []struct {
		name       string
		rows, cols int
	}{{"4864x896", benchRows, benchCols}, {"896x4864", benchCols, benchRows}}
	x := benchVec(benchTokens * benchRows)
	y := make([]float32, benchTokens*benchRows)
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%s/n=%d/threads=%d", s.name, benchTokens, threads), func(b *testing.B) {
				b.SetBytes(int64(2 * s.rows * s.cols))
				for b.Loop() {
					p.MatMulF16(y, x, w16[0], benchTokens, s.rows, s.cols)
				}
				reportGFLOPS(b, 2*float64(benchTokens*s.rows*s.cols))
			})
		}
		p.Close()
	}
}

func BenchmarkMatMulF32(b *testing.B) {
	_, w32 := benchWeights(1, true)
	x := benchVec(benchTokens * benchCols)
	y := make([]float32, benchTokens*benchRows)
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		b.Run(fmt.Sprintf("4864x896/n=%d/threads=%d", benchTokens, threads), func(b *testing.B) {
			b.SetBytes(4 * benchRows * benchCols)
			for b.Loop() {
				p.MatMulF32(y, x, w32[0], benchTokens, benchRows, benchCols)
			}
			reportGFLOPS(b, 2*float64(benchTokens*benchRows*benchCols))
		})
		p.Close()
	}
}

// BenchmarkVectorOps measures the per-token helpers on model-sized vectors:
// hidden 896 (RMSNorm, Dot over a head is 64), intermediate 4864 (SwiGLU),
// a 1024-position attention row (Softmax) and a vocabulary of 151,936
// (Argmax, against the element-by-element scan it replaced).
func BenchmarkVectorOps(b *testing.B) {
	h, g, up := benchVec(896), benchVec(4864), benchVec(4864)
	dst := make([]float32, 4864)
	row := benchVec(1024)
	b.Run("RMSNorm/896", func(b *testing.B) {
		b.SetBytes(4 * 896)
		for b.Loop() {
			RMSNorm(dst, h, h, 1e-6)
		}
	})
	b.Run("SwiGLU/4864", func(b *testing.B) {
		b.SetBytes(4 * 4864)
		for b.Loop() {
			SwiGLU(dst, g, up)
		}
	})
	b.Run("Softmax/1024", func(b *testing.B) {
		b.SetBytes(4 * 1024)
		for b.Loop() {
			copy(dst, row)
			Softmax(dst[:1024])
		}
	})
	b.Run("Dot/64", func(b *testing.B) {
		b.SetBytes(4 * 64)
		for b.Loop() {
			_ = Dot(h[:64], g[:64])
		}
	})
	// Argmax over Qwen2's vocabulary: a greedy decode step's sampling.
	logits := benchVec(151936)
	b.Run("Argmax/151936", func(b *testing.B) {
		b.SetBytes(4 * 151936)
		for b.Loop() {
			_ = Argmax(logits)
		}
	})
	b.Run("ArgmaxScan/151936", func(b *testing.B) {
		b.SetBytes(4 * 151936)
		for b.Loop() {
			best := 0
			for i, v := range logits {
				if v > logits[best] {
					best = i
				}
			}
			_ = best
		}
	})
}

// BenchmarkPoolOverhead measures one Parallel call that does no work: the
// fixed cost paid by every pooled kernel call (decode makes ~170 per token).
func BenchmarkPoolOverhead(b *testing.B) {
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		fn := func(lo, hi int) {}
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			for b.Loop() {
				p.Parallel(64, 1, fn)
			}
		})
		p.Close()
	}
}

// BenchmarkDecodeBound interleaves the two measurements that decide the
// decode target, so both see the same background load on a shared machine:
// the STREAM-like read pass (Sum over 256 MiB) and the fp16 GEMV streaming
// 24 distinct 4864x896 matrices, both split over all cores. It reports both
// rates and gemv/read, the fraction of the read bandwidth the GEMV reaches.
func BenchmarkDecodeBound(b *testing.B) {
	w16, _ := benchWeights(benchStream, false)
	x, y := benchVec(benchCols), make([]float32, benchRows)
	buf := hugeFloats(64 << 20)
	for i := range buf {
		buf[i] = 1
	}
	var sink [64]float32
	body := func(lo, hi int) { sink[lo*len(sink)/len(buf)] = Sum(buf[lo:hi]) }
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var tRead, tGemv float64
			for b.Loop() {
				t0 := time.Now()
				p.Parallel(len(buf), 1<<20, body)
				t1 := time.Now()
				for _, w := range w16 {
					p.MatVecF16(y, w, x, benchRows, benchCols)
				}
				tRead += t1.Sub(t0).Seconds()
				tGemv += time.Since(t1).Seconds()
			}
			read := float64(b.N) * float64(4*len(buf)) / tRead / 1e9
			gemv := float64(b.N) * float64(benchStream*2*benchRows*benchCols) / tGemv / 1e9
			b.ReportMetric(read, "read-GB/s")
			b.ReportMetric(gemv, "gemv-GB/s")
			b.ReportMetric(gemv/read, "gemv/read")
		})
		p.Close()
	}
}

// BenchmarkMatMulLevels compares the instruction-set levels of the fp16
// GEMM on one thread, alternating them inside one run so that both see the
// same background load: "avx512" (where the CPU has it), "avx2" and the
// pure-Go twin ("go", on a smaller batch: it is ~20x slower).
func BenchmarkMatMulLevels(b *testing.B) {
	w16, _ := benchWeights(1, false)
	x := benchVec(benchTokens * benchRows)
	y := make([]float32, benchTokens*benchRows)
	for _, s := range []struct{ rows, cols int }{{benchRows, benchCols}, {benchCols, benchRows}} {
		for _, level := range isaLevels() {
			b.Run(fmt.Sprintf("%dx%d/%s", s.rows, s.cols, level.name), func(b *testing.B) {
				defer level.set()()
				n := benchTokens
				if level.name == "go" {
					n = 8
				}
				b.SetBytes(int64(2 * s.rows * s.cols))
				for b.Loop() {
					MatMulF16(y, x, w16[0], n, s.rows, s.cols)
				}
				reportGFLOPS(b, 2*float64(n*s.rows*s.cols))
			})
		}
	}
}

// BenchmarkMatVecLevels compares the instruction-set levels of the fp16
// GEMV streaming 24 distinct matrices from DRAM (decode's access pattern) on
// one and two threads, with the read-bandwidth yardstick in the same run.
func BenchmarkMatVecLevels(b *testing.B) {
	w16, _ := benchWeights(benchStream, false)
	x, y := benchVec(benchCols), make([]float32, benchRows)
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, level := range isaLevels() {
			if level.name == "go" {
				continue
			}
			b.Run(fmt.Sprintf("%s/threads=%d", level.name, threads), func(b *testing.B) {
				defer level.set()()
				b.SetBytes(2 * benchRows * benchCols)
				i := 0
				for b.Loop() {
					p.MatVecF16(y, w16[i%benchStream], x, benchRows, benchCols)
					i++
				}
			})
		}
		p.Close()
	}
}

// BenchmarkAttentionPrefill measures one layer's attention over a prompt of
// n tokens from position 0 with Qwen2.5-0.5B's heads (14 query, 2 KV, 64
// wide), on 2 threads: "batch" is the batched path prefill takes, "pairs"
// the decode path's (token, head) work items applied to the whole batch,
// which is what prefill used before.
func BenchmarkAttentionPrefill(b *testing.B) {
	const heads, kvHeads, d = 14, 2, 64
	for _, n := range []int{128, 512, 2048} {
		pool := NewPool(2)
		a := NewAttention(pool, heads, kvHeads, d, n, 0.125)
		keys, values := benchVec(kvHeads*n*d), benchVec(kvHeads*n*d)
		q, out := benchVec(n*heads*d), make([]float32, n*heads*d)
		pairs := float64(heads) * float64(n) * float64(n+1) / 2
		for _, mode := range []string{"batch", "pairs"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				for b.Loop() {
					if mode == "batch" {
						a.Compute(out, q, heads*d, keys, values, n, 0)
						continue
					}
					a.out, a.q, a.qStride, a.keys, a.values, a.pos, a.n = out, q, heads*d, keys, values, 0, n
					a.capacity, a.window = n, 0
					pool.ParallelSlots(n*heads, 1, a.fn)
				}
				reportGFLOPS(b, 4*d*pairs)
			})
		}
		pool.Close()
	}
}

// BenchmarkAttentionDecode measures one decoded token's attention with Qwen3-0.6B's heads (16
// query heads on 8 KV heads of 128) and Qwen2.5-0.5B's (14 on 2 of 64) at a context of ctx
// positions, on one thread, over a float32 and an fp16 cache.
func BenchmarkAttentionDecode(b *testing.B) {
	for _, m := range []struct {
		name              string
		heads, kvHeads, d int
	}{{"qwen3", 16, 8, 128}, {"qwen2.5", 14, 2, 64}} {
		for _, ctx := range []int{256, 1024, 4096} {
			pool := NewPool(1)
			a := NewAttention(pool, m.heads, m.kvHeads, m.d, ctx, 0.088)
			keys, values := benchVec(m.kvHeads*ctx*m.d), benchVec(m.kvHeads*ctx*m.d)
			k16, v16 := make([]uint16, len(keys)), make([]uint16, len(values))
			half.F32ToF16(k16, keys)
			half.F32ToF16(v16, values)
			q, out := benchVec(m.heads*m.d), make([]float32, m.heads*m.d)
			for _, f16 := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/ctx=%d/f16=%v", m.name, ctx, f16), func(b *testing.B) {
					for b.Loop() {
						if f16 {
							a.ComputeWindowF16(out, q, m.heads*m.d, k16, v16, 1, ctx-1, ctx, 0)
						} else {
							a.Compute(out, q, m.heads*m.d, keys, values, 1, ctx-1)
						}
					}
					reportGFLOPS(b, 4*float64(m.d*m.heads*ctx))
				})
			}
			pool.Close()
		}
	}
}
