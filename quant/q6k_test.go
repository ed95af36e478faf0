package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
)

func randomQ6KBlock(r *rand.Rand, blk []byte) {
	for i := range blk {
		blk[i] = byte(r.Uint32())
	}
	binary.LittleEndian.PutUint16(blk[q6kD:], half.F32ToF16Scalar(float32(1e-4*(1+r.Float64()))))
}

// TestDequantizeQ6KLayout holds DequantizeRowQ6K to the layout read one weight at a time
// (q6kLevel), which is llama.cpp's Q6_K: weight i takes scale i/16.
func TestDequantizeQ6KLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 2, 512
	data := make([]byte, rows*cols/SuperBlock*Q6KBlockBytes)
	for b := 0; b < len(data)/Q6KBlockBytes; b++ {
		randomQ6KBlock(r, data[b*Q6KBlockBytes:(b+1)*Q6KBlockBytes])
	}
	out := make([]float32, rows*cols)
	if err := DequantizeQ6K(out, data, rows, cols); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		blk := data[i/SuperBlock*Q6KBlockBytes:]
		j := i % SuperBlock
		d := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk[q6kD:]))
		want := d * float32(int8(blk[q6kScales+j/16])) * float32(q6kLevel(blk, j)-32)
		if v != want {
			t.Fatalf("weight %d: %g, want %g", i, v, want)
		}
	}
}

// TestQ6KRoundTripOnGrid: weights on a q6k grid come back within a small fraction of a step,
// and the quantizer's own codes read back through q6kLevel (the packing is the layout's).
func TestQ6KRoundTripOnGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	blk := make([]byte, Q6KBlockBytes)
	w := make([]float32, SuperBlock)
	back := make([]float32, SuperBlock)
	out := make([]byte, Q6KBlockBytes)
	for it := 0; it < 40; it++ {
		randomQ6KBlock(r, blk)
		DequantizeRowQ6K(w, blk)
		if err := QuantizeRowQ6K(out, w, nil); err != nil {
			t.Fatal(err)
		}
		DequantizeRowQ6K(back, out)
		var e, s float64
		for i := range w {
			e += float64(w[i]-back[i]) * float64(w[i]-back[i])
			s += float64(w[i]) * float64(w[i])
		}
		if rel := math.Sqrt(e / s); rel > 0.02 {
			t.Fatalf("block %d: relative RMS error %.4f of weights on a q6k grid", it, rel)
		}
	}
	// A grid the fit recovers exactly: every sub-block holds the level -32 (so its largest
	// magnitude takes it, as the fit arranges), one sub-block has the scale -128 (so the largest
	// scale takes it) and d is a power of two. Every code must come back as drawn.
	for it := 0; it < 20; it++ {
		const d = 1.0 / 1024
		var sc [16]int8
		for j := range sc {
			sc[j] = int8(r.IntN(255) - 127)
			if sc[j] == 0 {
				sc[j] = 1
			}
		}
		sc[r.IntN(16)] = -128
		x := make([]float32, SuperBlock)
		for i := range x {
			l := int32(r.IntN(64)) - 32
			if i%16 == 0 {
				l = -32
			}
			x[i] = d * float32(sc[i/16]) * float32(l)
		}
		if err := QuantizeRowQ6K(out, x, nil); err != nil {
			t.Fatal(err)
		}
		DequantizeRowQ6K(back, out)
		for i := range x {
			if back[i] != x[i] {
				t.Fatalf("grid %d: weight %d = %g, back %g", it, i, x[i], back[i])
			}
		}
	}
}
