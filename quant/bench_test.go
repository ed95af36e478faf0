package quant

import (
	"math/rand/v2"
	"testing"
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
		b.Run("q4/G="+map[int]string{32: "32", 128: "128"}[g], func(b *testing.B) {
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
