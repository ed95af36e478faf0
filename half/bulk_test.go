package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

// allBits returns every 16-bit pattern once, in order.
func allBits() []uint16 {
	s := make([]uint16, 1<<16)
	for i := range s {
		s[i] = uint16(i)
	}
	return s
}

// expectedStats computes the loss counts of one conversion from their
// definitions in Stats, using the float64 oracle rather than classify.
func expectedStats(src []uint16) Stats {
	var st Stats
	for _, b := range src {
		v := float64(BF16ToF32Scalar(b))
		if math.IsNaN(v) {
			st.NaN++
			continue
		}
		h := oracleF16(v)
		r := f16Value(h)
		switch {
		case math.IsInf(r, 0) && !math.IsInf(v, 0):
			st.Overflow++
		case r == 0 && v != 0:
			st.Underflow++
		case h&0x7C00 == 0 && h&0x3FF != 0:
			st.Subnormal++
		}
		if r != v {
			st.Inexact++
		}
	}
	return st
}

// TestBF16ToF16AllValues converts all 65536 bfloat16 values with the bulk
// function (assembly where available), with the pure-Go twin, and one by one
// with the scalar function, and requires the same bits and the same counts.
func TestBF16ToF16AllValues(t *testing.T) {
	src := allBits()
	want := expectedStats(src)
	if want.Overflow == 0 || want.Underflow == 0 || want.Subnormal == 0 || want.NaN == 0 {
		t.Fatalf("the reference counts miss a kind of loss: %+v", want)
	}

	got := make([]uint16, len(src))
	st := BF16ToF16(got, src)
	gen := make([]uint16, len(src))
	var gst Stats
	bf16ToF16Generic(gen, src, &gst)
	for i, b := range src {
		s := BF16ToF16Scalar(b)
		if got[i] != s || gen[i] != s {
			t.Fatalf("bf16 %#04x: bulk %#04x, generic %#04x, scalar %#04x", b, got[i], gen[i], s)
		}
	}
	if st != want || gst != want {
		t.Fatalf("stats: bulk %+v, generic %+v, want %+v", st, gst, want)
	}
	t.Logf("all bf16 values: %+v (asm %v)", st, HasAsm())
}

// TestBF16ToF16Blocks shuffles all 65536 values so every 16-value block of the
// assembly mixes fast-path and counted lanes, and converts them at every
// start offset and odd length, comparing with the scalar function and counts.
func TestBF16ToF16Blocks(t *testing.T) {
	src := allBits()
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	dst := make([]uint16, len(src))
	if st, want := BF16ToF16(dst, src), expectedStats(src); st != want {
		t.Fatalf("shuffled stats %+v, want %+v", st, want)
	}
	for off := 0; off < 17; off++ {
		for n := 0; n < 70; n++ {
			s := src[off*257 : off*257+n]
			d := make([]uint16, n+1)
			d[n] = 0xABCD // must survive: dst past len(src) is not written
			st := BF16ToF16(d, s)
			for i, b := range s {
				if d[i] != BF16ToF16Scalar(b) {
					t.Fatalf("off %d n %d: [%d] = %#04x, want %#04x", off, n, i, d[i], BF16ToF16Scalar(b))
				}
			}
			if d[n] != 0xABCD {
				t.Fatalf("off %d n %d: wrote past len(src)", off, n)
			}
			if want := expectedStats(s); st != want {
				t.Fatalf("off %d n %d: stats %+v, want %+v", off, n, st, want)
			}
		}
	}
}

func TestBF16ToF16InPlace(t *testing.T) {
	buf := allBits()
	BF16ToF16(buf, buf)
	for i, h := range buf {
		if want := BF16ToF16Scalar(uint16(i)); h != want {
			t.Fatalf("in place [%#04x] = %#04x, want %#04x", i, h, want)
		}
	}
}

func TestBF16ToF16StatsExamples(t *testing.T) {
	cases := []struct {
		v    float32
		want Stats
	}{
		{1.5, Stats{}},
		{70000, Stats{Overflow: 1, Inexact: 1}},
		{-1e-8, Stats{Underflow: 1, Inexact: 1}},
		{float32(math.Ldexp(1, -20)), Stats{Subnormal: 1}},                     // exact subnormal
		{float32(math.Ldexp(1+1.0/128, -20)), Stats{Subnormal: 1, Inexact: 1}}, // loses a bit
		{float32(math.NaN()), Stats{NaN: 1}},
		{float32(math.Inf(-1)), Stats{}},
	}
	for _, c := range cases {
		b := F32ToBF16Scalar(c.v)
		// Pad to 16 values so the assembly (not only the tail) sees it.
		src := make([]uint16, 16)
		src[7] = b
		dst := make([]uint16, 16)
		if got := BF16ToF16(dst, src); got != c.want {
			t.Errorf("%g: stats %+v, want %+v", c.v, got, c.want)
		}
	}
}

func TestF16ToF32AllValues(t *testing.T) {
	src := allBits()
	for off := 0; off < 9; off++ {
		dst := make([]float32, len(src)-off)
		F16ToF32(dst, src[off:])
		for i, h := range src[off:] {
			if got, want := math.Float32bits(dst[i]), math.Float32bits(F16ToF32Scalar(h)); got != want {
				t.Fatalf("off %d: F16ToF32(%#04x) = %#08x, want %#08x", off, h, got, want)
			}
		}
	}
}

func TestBF16ToF32AllValues(t *testing.T) {
	src := allBits()
	for off := 0; off < 9; off++ {
		dst := make([]float32, len(src)-off)
		BF16ToF32(dst, src[off:])
		for i, b := range src[off:] {
			if got := math.Float32bits(dst[i]); got != uint32(b)<<16 {
				t.Fatalf("off %d: BF16ToF32(%#04x) = %#08x", off, b, got)
			}
		}
	}
}

// TestF32ToF16Random compares the bulk narrowing (assembly where available)
// with the scalar function, bit for bit, on random bit patterns of every
// class, the edge values, and every bfloat16 value, at odd lengths.
func TestF32ToF16Random(t *testing.T) {
	src := append(edgeF32(), randomF32(300000, 5)...)
	for b := 0; b < 1<<16; b++ {
		src = append(src, math.Float32frombits(uint32(b)<<16|uint32(b)))
	}
	for off := 0; off < 9; off++ {
		s := src[off : len(src)-off*3]
		dst := make([]uint16, len(s))
		F32ToF16(dst, s)
		for i, f := range s {
			if want := F32ToF16Scalar(f); dst[i] != want {
				t.Fatalf("off %d: F32ToF16(%#08x) = %#04x, want %#04x", off, math.Float32bits(f), dst[i], want)
			}
		}
	}
	bf := make([]uint16, len(src))
	F32ToBF16(bf, src)
	for i, f := range src {
		if bf[i] != F32ToBF16Scalar(f) {
			t.Fatalf("F32ToBF16(%g) = %#04x", f, bf[i])
		}
	}
}

func TestShortDstPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"BF16ToF16": func() { BF16ToF16(make([]uint16, 3), make([]uint16, 4)) },
		"BF16ToF32": func() { BF16ToF32(make([]float32, 3), make([]uint16, 4)) },
		"F16ToF32":  func() { F16ToF32(make([]float32, 3), make([]uint16, 4)) },
		"F32ToF16":  func() { F32ToF16(make([]uint16, 3), make([]float32, 4)) },
		"F32ToBF16": func() { F32ToBF16(make([]uint16, 3), make([]float32, 4)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a short dst did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestBulkNoAllocs(t *testing.T) {
	src := make([]uint16, 1000)
	dst := make([]uint16, 1000)
	f := make([]float32, 1000)
	if n := testing.AllocsPerRun(10, func() {
		BF16ToF16(dst, src)
		BF16ToF32(f, src)
		F16ToF32(f, src)
		F32ToF16(dst, f)
	}); n != 0 {
		t.Fatalf("bulk conversions allocate %v times per call", n)
	}
}
