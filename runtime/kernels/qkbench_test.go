package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/dtype"
)

// BenchmarkKProducts times the q4k and q6k products on a down projection's shape (896 rows of
// 4864 inputs: Qwen2.5-0.5B's): the decode GEMV in both forms, and a 64-token batch.
func BenchmarkKProducts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 896, 4864
	for _, dt := range []dtype.DType{dtype.Q4K, dtype.Q6K} {
		m := newK(r, dt, rows, cols, false)
		float, acts := MatMulQ4KFloat, MatMulQ4KActs
		if dt == dtype.Q6K {
			float, acts = MatMulQ6KFloat, MatMulQ6KActs
		}
		for _, n := range []int{1, 64} {
			x := randActs(r, n, cols, false)
			y := make([]float32, n*rows)
			b.Run(fmt.Sprintf("%s/float/n=%d", dt, n), func(b *testing.B) {
				for b.Loop() {
					float(y, rows, x, n, m.w, rows, cols)
				}
				b.ReportMetric(float64(2*n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			if n == 1 {
				var a Int8Acts
				a.Quantize(x, n, cols)
				b.Run(fmt.Sprintf("%s/acts/n=%d", dt, n), func(b *testing.B) {
					for b.Loop() {
						acts(y, rows, &a, m.w, rows)
					}
					b.ReportMetric(float64(2*n*rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
