package quant

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/anepack/anepack/dtype"
)

// BenchmarkQuantize measures the quantizers on a 64 x 896 block of
// weights; MB/s counts float32 input bytes (divide by 4 for weights/s).
func BenchmarkQuantize(b *testing.B) {
	const rows, cols = 64, 896
	w := randWeights(rand.New(rand.NewPCG(9, 9)), rows, cols)
	b.Run("q8", func(b *testing.B) {
		data, scale := make([]int8, rows*cols), make([]uint16, rows)
		b.SetBytes(4 * rows * cols)
		for b.Loop() {
			if err := QuantizeQ8(data, scale, w, rows, cols); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, g := range []int{32, 128} {
		b.Run("q4/G="+strconv.Itoa(g), func(b *testing.B) {
			data, scale, offset := make([]byte, rows*cols/2), make([]uint16, rows*cols/g), make([]uint16, rows*cols/g)
			b.SetBytes(4 * rows * cols)
			for b.Loop() {
				if err := QuantizeQ4(data, scale, offset, w, rows, cols, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQuantizeFrom measures what packing runs: a 896 x 4864 BF16 weight (Qwen2.5-0.5B's
// down projection) quantized straight from its checkpoint bytes on one goroutine. MB/s counts
// the BF16 input (2 bytes per weight).
func BenchmarkQuantizeFrom(b *testing.B) {
	const rows, cols = 896, 4864
	raw, _ := rawRows(randWeights(rand.New(rand.NewPCG(10, 10)), rows, cols), dtype.BF16)
	b.Run("q8", func(b *testing.B) {
		data, scale := make([]int8, rows*cols), make([]uint16, rows)
		b.SetBytes(int64(len(raw)))
		cpuLoop(b, func() {
			if err := QuantizeQ8From(data, scale, raw, dtype.BF16, rows, cols); err != nil {
				b.Fatal(err)
			}
		})
	})
	for _, g := range []int{32, 64, 128} {
		b.Run("q4/G="+strconv.Itoa(g), func(b *testing.B) {
			data, scale, offset := make([]byte, rows*cols/2), make([]uint16, rows*cols/g), make([]uint16, rows*cols/g)
			b.SetBytes(int64(len(raw)))
			cpuLoop(b, func() {
				if err := QuantizeQ4From(data, scale, offset, raw, dtype.BF16, rows, cols, g); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkQ4Fit compares the group fit with the frozen reference search (q4ref_test.go) on
// the same bf16-rounded weights, so the speedup is measured in one run; MB/s counts float32
// weights.
func BenchmarkQ4Fit(b *testing.B) {
	const rows, cols = 16, 896
	_, w := rawRows(randWeights(rand.New(rand.NewPCG(9, 9)), rows, cols), dtype.BF16)
	for _, g := range []int{32, 64, 128} {
		q, data := make([]uint8, g), make([]byte, g/2)
		b.Run("ref/G="+strconv.Itoa(g), func(b *testing.B) {
			b.SetBytes(4 * rows * cols)
			cpuLoop(b, func() {
				for i := 0; i < len(w); i += g {
					refFitGroupQ4(q, w[i:i+g])
				}
			})
		})
		b.Run("fast/G="+strconv.Itoa(g), func(b *testing.B) {
			var f q4Fit
			b.SetBytes(4 * rows * cols)
			cpuLoop(b, func() {
				for i := 0; i < len(w); i += g {
					f.fitGroup(data, w[i:i+g], fitBest)
				}
			})
		})
	}
}

func BenchmarkQuantizeK(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 64, 1024
	w := randWeights(r, rows, cols)
	_, imp := kActs(r, 8, cols)
	src, _ := rawRows(w, dtype.F32)
	for _, k := range []struct {
		name string
		dt   dtype.DType
		f    func(data, src []byte, st dtype.DType, rows, cols int, imp []float32) error
	}{{"q4k", dtype.Q4K, QuantizeQ4KFrom}, {"q6k", dtype.Q6K, QuantizeQ6KFrom}} {
		rb, _ := KRowBytes(k.dt, cols)
		data := make([]byte, rows*rb)
		b.Run(k.name, func(b *testing.B) {
			cpuLoop(b, func() {
				if err := k.f(data, src, dtype.F32, rows, cols, imp); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mweights/s")
		})
	}
	data, scale, offset, _ := q4Buffers(rows, cols, 32)
	b.Run("q4w", func(b *testing.B) {
		cpuLoop(b, func() {
			if err := QuantizeQ4WeightedFrom(data, scale, offset, src, dtype.F32, rows, cols, 32, imp); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mweights/s")
	})
}
