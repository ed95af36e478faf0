package quant

import (
	"github.com/anepack/anepack/dtype"

	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/half"
)

// mlxTensor builds an MLX 4-bit tensor: random levels packed into uint32
// words (element 0 in bits 0-3), and per-group scales and biases in dt.
func mlxTensor(r *rand.Rand, rows, cols, group int, dt dtype.DType) (q []uint8, weight, scales, biases []byte, s, b []float32) {
	q = make([]uint8, rows*cols)
	weight = make([]byte, rows*cols/2)
	for i := range q {
		q[i] = uint8(r.IntN(16))
	}
	for wd := 0; wd < rows*cols/8; wd++ {
		var u uint32
		for j := 0; j < 8; j++ {
			u |= uint32(q[8*wd+j]) << (4 * j)
		}
		binary.LittleEndian.PutUint32(weight[4*wd:], u)
	}
	ng := rows * cols / group
	sv, bv := make([]float32, ng), make([]float32, ng)
	for g := range sv {
		// MLX: edge = min or max, scale signed so the edge is level 0.
		sv[g] = float32(0.002 + 0.004*r.Float64())
		bv[g] = -7.5 * sv[g] * float32(0.5+r.Float64())
		if g%4 == 1 {
			sv[g], bv[g] = -sv[g], -bv[g]
		}
	}
	scales, s = rawRows(sv, dt)
	biases, b = rawRows(bv, dt)
	return
}

func TestFromMLX4(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		for _, group := range []int{32, 64, 128} {
			const rows, cols = 6, 512
			q, weight, scales, biases, s, b := mlxTensor(r, rows, cols, group, dt)
			data, scale, offset, back := q4Buffers(rows, cols, group)
			maxDiff, err := FromMLX4(data, scale, offset, weight, scales, biases, dt, rows, cols, group)
			if err != nil {
				t.Fatal(err)
			}
			for i := range data {
				if data[i] != weight[i] {
					t.Fatalf("data byte %d changed", i)
				}
			}
			if err := DequantizeQ4(back, data, scale, offset, rows, cols, group); err != nil {
				t.Fatal(err)
			}
			var worst, smax float64
			for i := range back {
				g := i / group
				want := float64(s[g])*float64(q[i]) + float64(b[g])
				worst = max(worst, math.Abs(float64(back[i])-want))
				smax = max(smax, math.Abs(float64(s[g])))
			}
			if worst != maxDiff {
				t.Fatalf("%v G=%d: reported max diff %g, measured %g", dt, group, maxDiff, worst)
			}
			// The offset is about -bias/scale in [0, 15]: fp16 holds it to
			// 2^-7, so a weight moves by at most |scale| * 2^-7 (and a bit of
			// float32 rounding).
			if maxDiff > smax/128*1.01 {
				t.Fatalf("%v G=%d: max diff %g > max|scale|/128 = %g", dt, group, maxDiff, smax/128)
			}
			t.Logf("%v G=%3d: largest |MLX - q4| = %.3g (max |scale| %.3g)", dt, group, maxDiff, smax)
		}
	}
}

func TestFromMLX4Degenerate(t *testing.T) {
	// A group of nearly equal values far from 0: bias/scale = 1e6 does not
	// fit fp16, so the scale is enlarged; the error stays within
	// 15*|bias|/2048 and is reported.
	const cols, group = 64, 64
	q := make([]uint8, cols)
	weight := make([]byte, cols/2)
	for i := range weight {
		q[2*i], q[2*i+1] = uint8(i%16), uint8(15-i%16)
		weight[i] = q[2*i] | q[2*i+1]<<4
	}
	scales, s := rawRows([]float32{1e-6}, dtype.F32)
	biases, b := rawRows([]float32{1}, dtype.F32)
	data, scale, offset, back := q4Buffers(1, cols, group)
	maxDiff, err := FromMLX4(data, scale, offset, weight, scales, biases, dtype.F32, 1, cols, group)
	if err != nil {
		t.Fatal(err)
	}
	if z := half.F16ToF32Scalar(offset[0]); math.IsInf(float64(z), 0) || math.Abs(float64(z)) > mlxMaxOffset {
		t.Fatalf("offset %g out of range", z)
	}
	if err := DequantizeQ4(back, data, scale, offset, 1, cols, group); err != nil {
		t.Fatal(err)
	}
	for i := range back {
		want := float64(s[0])*float64(q[i]) + float64(b[0])
		if d := math.Abs(float64(back[i]) - want); d > maxDiff || d > 15.0/mlxMaxOffset*1.01 {
			t.Fatalf("[%d] %g, want %g (reported max diff %g)", i, back[i], want, maxDiff)
		}
	}
}

func TestFromMLX4Errors(t *testing.T) {
	const rows, cols, group = 2, 128, 64
	data, scale, offset, _ := q4Buffers(rows, cols, group)
	weight := make([]byte, rows*cols/2)
	sb := make([]byte, 2*rows*cols/group)
	if _, err := FromMLX4(data, scale, offset, weight[1:], sb, sb, dtype.BF16, rows, cols, group); err == nil {
		t.Fatal("short weight accepted")
	}
	if _, err := FromMLX4(data, scale, offset, weight, sb[2:], sb, dtype.BF16, rows, cols, group); err == nil {
		t.Fatal("short scales accepted")
	}
	if _, err := FromMLX4(data, scale, offset, weight, sb, sb, dtype.BF16, rows, cols, 32); err == nil {
		t.Fatal("wrong group accepted")
	}
	nan := []byte{0xC0, 0x7F, 0, 0, 0, 0, 0, 0} // bf16 NaN then zeros
	if _, err := FromMLX4(data, scale, offset, weight, nan, sb, dtype.BF16, rows, cols, group); err == nil {
		t.Fatal("NaN scale accepted")
	}
}
