package half

import (
	"math/rand/v2"
	"testing"
)

// Benchmark sizes: 1 MiB of input stays in L2/L3 (pure conversion speed);
// 64 MiB goes to DRAM like packing a real checkpoint does. SetBytes is the
// input size, so the MB/s column is input bytes per second on one core.
var benchSizes = []struct {
	name string
	n    int // elements
}{{"1MiB", 1 << 19}, {"64MiB", 1 << 25}}

// weightsBF16 returns n bfloat16 values drawn like LLM weights, N(0, 0.02),
// so the share of subnormal-range values (and the slow path) is realistic.
func weightsBF16(n int) []uint16 {
	r := rand.New(rand.NewPCG(7, 8))
	out := make([]uint16, n)
	for i := range out {
		out[i] = F32ToBF16Scalar(float32(r.NormFloat64() * 0.02))
	}
	return out
}

func BenchmarkBF16ToF16(b *testing.B) {
	for _, sz := range benchSizes {
		src := weightsBF16(sz.n)
		dst := make([]uint16, sz.n)
		b.Run(sz.name, func(b *testing.B) {
			b.SetBytes(int64(2 * sz.n))
			for b.Loop() {
				BF16ToF16(dst, src)
			}
		})
		b.Run(sz.name+"/generic", func(b *testing.B) {
			b.SetBytes(int64(2 * sz.n))
			var st Stats
			for b.Loop() {
				bf16ToF16Generic(dst, src, &st)
			}
		})
	}
}

func BenchmarkBF16ToF32(b *testing.B) {
	src := weightsBF16(1 << 19)
	dst := make([]float32, len(src))
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		BF16ToF32(dst, src)
	}
}

func BenchmarkF16ToF32(b *testing.B) {
	src := make([]uint16, 1<<19)
	BF16ToF16(src, weightsBF16(len(src)))
	dst := make([]float32, len(src))
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		F16ToF32(dst, src)
	}
}

func BenchmarkF32ToF16(b *testing.B) {
	src := make([]float32, 1<<19)
	BF16ToF32(src, weightsBF16(len(src)))
	dst := make([]uint16, len(src))
	b.SetBytes(int64(4 * len(src)))
	for b.Loop() {
		F32ToF16(dst, src)
	}
}
