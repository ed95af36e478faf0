package quant

import (
	"math"
	"strings"
	"testing"
)

// TestE8M0: every scale code is the power of two 2^(e-127), and 255 is NaN.
func TestE8M0(t *testing.T) {
	for e := 0; e < 255; e++ {
		if got, want := float64(E8M0(uint8(e))), math.Ldexp(1, e-127); got != want {
			t.Fatalf("E8M0(%d) = %g, want %g", e, got, want)
		}
	}
	if !math.IsNaN(float64(E8M0(255))) {
		t.Fatal("E8M0(255) is not NaN")
	}
}

// TestDequantizeMXFP4 dequantizes a row by hand: the low nibble is the even element, bit 3
// the sign, and the block's scale multiplies all 32 weights of its block.
func TestDequantizeMXFP4(t *testing.T) {
	codes := make([]byte, 32)
	scales := []byte{127, 129} // 1 and 4
	codes[0] = 0x72            // element 0: code 2 (1.0), element 1: code 7 (6.0)
	codes[1] = 0xF9            // element 2: code 9 (-0.5), element 3: code 15 (-6.0)
	codes[16] = 0x58           // element 32: code 8 (-0), element 33: code 5 (3.0), times 4
	dst := make([]float32, 64)
	if err := DequantizeMXFP4(dst, codes, scales, 1, 64); err != nil {
		t.Fatal(err)
	}
	want := map[int]float32{0: 1, 1: 6, 2: -0.5, 3: -6, 33: 12}
	for i, v := range dst {
		if v != want[i] {
			t.Fatalf("weight %d = %g, want %g", i, v, want[i])
		}
	}
	if !math.Signbit(float64(dst[32])) || math.Signbit(float64(dst[4])) {
		t.Errorf("code 8 must be -0 (got %g), code 0 +0 (got %g)", dst[32], dst[4])
	}
	// The OCP value table: magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
	for q := 0; q < 16; q++ {
		mag := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}[q&7]
		if FP4[q] != mag*float32(1-2*(q>>3)) || math.Signbit(float64(FP4[q])) != (q >= 8) {
			t.Errorf("FP4[%d] = %g", q, FP4[q])
		}
	}
}

// TestCheckMXFP4 refuses wrong lengths, columns that are not whole blocks and the NaN scale,
// naming what was expected.
func TestCheckMXFP4(t *testing.T) {
	codes, scales := make([]byte, 2*64/2), make([]byte, 2*64/32)
	if err := CheckMXFP4(codes, scales, 2, 64); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		codes, scales []byte
		rows, cols    int
		want          string
	}{
		{codes, scales[:3], 2, 64, "3 mxfp4 scales for 2 x 64 weights; expected 4"},
		{codes[:63], scales, 2, 64, "63 bytes of mxfp4 codes for 2 x 64 weights; expected 64"},
		{codes, scales, 4, 48, "positive multiple of 32"},
		{codes, []byte{0, 0, 0, 255}, 2, 64, "row 1, block 1 is 255"},
	} {
		err := CheckMXFP4(c.codes, c.scales, c.rows, c.cols)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckMXFP4(%d codes, %d scales, %d x %d) = %v, want %q", len(c.codes), len(c.scales), c.rows, c.cols, err, c.want)
		}
	}
	if err := DequantizeMXFP4(make([]float32, 10), codes, scales, 2, 64); err == nil {
		t.Error("a dst of the wrong length was accepted")
	}
}
