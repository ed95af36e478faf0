package half

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// f16Value decodes fp16 bits with float64 arithmetic straight from the IEEE
// definition, independently of the code under test. NaN gives NaN.
func f16Value(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1F
	m := float64(h & 0x3FF)
	switch e {
	case 0:
		return s * m * math.Ldexp(1, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return s * math.Inf(1)
	}
	return s * (1 + m/1024) * math.Ldexp(1, e-15)
}

// ladder holds the non-negative finite fp16 values in increasing order, then
// +Inf standing in at 65536, the value it takes for rounding (IEEE 754 rounds
// to Inf exactly when the result would be 65536 or more with unbounded range).
var ladder = func() []float64 {
	var l []float64
	for h := uint16(0); h < 0x7C00; h++ {
		l = append(l, f16Value(h))
	}
	return append(l, 65536)
}()

// oracleF16 rounds a finite float64 to fp16 bits, nearest with ties to even,
// by searching the ladder: an independent reference for F32ToF16Scalar.
func oracleF16(v float64) uint16 {
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	if v >= 65536 {
		return sign | 0x7C00
	}
	i := sort.SearchFloat64s(ladder, v) // first index with ladder[i] >= v
	if ladder[i] == v {
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	dlo, dhi := v-ladder[lo], ladder[hi]-v
	switch {
	case dlo < dhi:
		return sign | uint16(lo)
	case dhi < dlo:
		return sign | uint16(hi)
	case lo%2 == 0:
		return sign | uint16(lo)
	default:
		return sign | uint16(hi)
	}
}

// edgeF32 lists float32 values at the boundaries of fp16's range: around the
// largest finite value, the overflow threshold, the smallest normal and
// subnormal, and the rounding ties between them.
func edgeF32() []float32 {
	vals := []float64{0, 65504, 65519.99, 65520, 65520.01, 65536, 1e9,
		math.Ldexp(1, -14), math.Ldexp(1, -24), math.Ldexp(1, -25),
		math.Ldexp(1.5, -25), math.Ldexp(1, -26), math.Ldexp(3, -25),
		math.Ldexp(1, -14) - math.Ldexp(1, -25), 1, 1 + math.Ldexp(1, -11),
		1 + 3*math.Ldexp(1, -11), 2049, 2051, math.MaxFloat32,
		math.SmallestNonzeroFloat32, math.Inf(1)}
	var out []float32
	for _, v := range vals {
		f := float32(v)
		out = append(out, f, -f, math.Nextafter32(f, 0), math.Nextafter32(f, float32(math.Inf(1))))
	}
	return out
}

// randomF32 returns n float32 values with uniformly random bits (every class:
// NaNs, infinities, subnormals) mixed with values in and around fp16's range.
func randomF32(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = math.Float32frombits(r.Uint32())
		} else {
			out[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(50)-30))
		}
	}
	return out
}

func TestF32ToF16ScalarMatchesOracle(t *testing.T) {
	vals := append(edgeF32(), randomF32(200000, 1)...)
	for b := 0; b < 1<<16; b++ { // every bfloat16 value, as float32
		vals = append(vals, math.Float32frombits(uint32(b)<<16))
	}
	for _, f := range vals {
		got := F32ToF16Scalar(f)
		if math.IsNaN(float64(f)) {
			b := math.Float32bits(f)
			want := uint16(b>>16)&0x8000 | 0x7E00 | uint16(b&0x7FFFFF>>13)
			if got != want {
				t.Fatalf("F32ToF16Scalar(NaN %#08x) = %#04x, want quiet NaN %#04x", b, got, want)
			}
			continue
		}
		if want := oracleF16(float64(f)); got != want {
			t.Fatalf("F32ToF16Scalar(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
}

func TestF16ToF32ScalarAllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := F16ToF32Scalar(h)
		want := f16Value(h)
		if math.IsNaN(want) {
			b := math.Float32bits(got)
			wantBits := uint32(h&0x8000)<<16 | 0x7FC00000 | uint32(h&0x3FF)<<13
			if b != wantBits {
				t.Fatalf("F16ToF32Scalar(%#04x) = %#08x, want quiet NaN %#08x", h, b, wantBits)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
			t.Fatalf("F16ToF32Scalar(%#04x) = %g, want %g", h, got, want)
		}
		// Widening then narrowing must give the same bits back.
		if back := F32ToF16Scalar(got); back != h {
			t.Fatalf("F32ToF16Scalar(F16ToF32Scalar(%#04x)) = %#04x", h, back)
		}
	}
}

// oracleBF16 rounds a finite float32 to bfloat16 bits, nearest with ties to
// even, by comparing the two bfloat16 neighbours in float64.
func oracleBF16(f float32) uint16 {
	b := math.Float32bits(f)
	lo := uint16(b >> 16) // truncation: toward zero in magnitude
	if b&0xFFFF == 0 {
		return lo
	}
	hi := lo + 1
	v := math.Abs(float64(f))
	vlo := math.Abs(float64(BF16ToF32Scalar(lo)))
	vhi := math.Abs(float64(BF16ToF32Scalar(hi)))
	if hi&0x7FFF == 0x7F80 {
		vhi = math.Ldexp(1, 128) // Inf stands in at 2^128 for rounding
	}
	switch {
	case v-vlo < vhi-v:
		return lo
	case vhi-v < v-vlo:
		return hi
	case lo%2 == 0:
		return lo
	default:
		return hi
	}
}

func TestF32ToBF16ScalarMatchesOracle(t *testing.T) {
	for _, f := range append(edgeF32(), randomF32(200000, 2)...) {
		got := F32ToBF16Scalar(f)
		if math.IsNaN(float64(f)) {
			if want := uint16(math.Float32bits(f)>>16) | 0x40; got != want {
				t.Fatalf("F32ToBF16Scalar(NaN %#08x) = %#04x, want %#04x", math.Float32bits(f), got, want)
			}
			continue
		}
		if want := oracleBF16(f); got != want {
			t.Fatalf("F32ToBF16Scalar(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
}

func TestBF16ScalarRoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := uint16(i)
		f := BF16ToF32Scalar(b)
		if math.Float32bits(f) != uint32(b)<<16 {
			t.Fatalf("BF16ToF32Scalar(%#04x) = %#08x", b, math.Float32bits(f))
		}
		want := b
		if b&0x7FFF > 0x7F80 {
			want |= 0x40 // NaNs come back quiet
		}
		if got := F32ToBF16Scalar(f); got != want {
			t.Fatalf("F32ToBF16Scalar(BF16ToF32Scalar(%#04x)) = %#04x", b, got)
		}
	}
}

func TestBF16ToF16ScalarAllValues(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := uint16(i)
		got := BF16ToF16Scalar(b)
		if want := F32ToF16Scalar(BF16ToF32Scalar(b)); got != want {
			t.Fatalf("BF16ToF16Scalar(%#04x) = %#04x, want %#04x", b, got, want)
		}
		// fp16 has more mantissa bits, so fp16 -> bf16 -> fp16 is only
		// guaranteed for values bfloat16 holds exactly; check those.
		if b&0x7FFF <= 0x7F80 && f16Value(got) == float64(BF16ToF32Scalar(b)) {
			if back := F16ToBF16Scalar(got); back != b {
				t.Fatalf("F16ToBF16Scalar(%#04x) = %#04x, want %#04x", got, back, b)
			}
		}
	}
}
