package mil

import (
	"math"
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
)

// The tests below run hand-written MIL programs from testdata and compare every output with
// a float64 reference computed here from the same fp16 inputs and weights, independently of
// the sim's code. Tolerances are stated per test as an error bound: one fp16 rounding of the
// result is half an ulp, and every intermediate fp16 rounding of the program adds at most
// 2^-11 relative error to the terms it touches, so a chain of k roundings over Σ|terms| is
// bounded by k·2^-11·Σ|terms|.

const u16 = 1.0 / 2048 // 2^-11, the fp16 unit roundoff

func check(t *testing.T, what string, i int, got, ref, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-ref) > tol {
		t.Fatalf("%s[%d] = %g; float64 reference %g (|error| %g > tolerance %g)", what, i, got, ref, math.Abs(got-ref), tol)
	}
}

// TestSimElementwise: add, sub, mul, pow, sigmoid, per-channel broadcast mul, scalar-minus-
// tensor sub, reduce_sum over channels, softmax over channels, concat of all nine.
func TestSimElementwise(t *testing.T) {
	r := newRand(2)
	const C, S = 64, 32
	a, b := randF16(r, C*S, 3), randF16(r, C*S, 3)
	chs := randF16(r, C, 2)
	e := compileText(t, readTestdata(t, "sim_elementwise.mil"), map[string][]byte{
		"@model_path/weights/scale.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, f16Bytes(chs)),
	})
	y := make([]uint16, 513*S)
	if err := e.Eval([][]uint16{a, b}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	af, bf, cf := f64s(a), f64s(b), f64s(chs)
	out := func(part, c, s int) float64 { return float64(f16ToF32(y[(part*C+c)*S+s])) }
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for s := 0; s < S; s++ {
		var rs, rsMag, smax, ssum float64
		smax = math.Inf(-1)
		for c := 0; c < C; c++ {
			smax = math.Max(smax, af[c*S+s])
		}
		for c := 0; c < C; c++ {
			ssum += math.Exp(af[c*S+s] - smax)
		}
		for c := 0; c < C; c++ {
			i := c*S + s
			x, z := af[i], bf[i]
			one := func(part int, ref float64) { check(t, partNames[part], i, out(part, c, s), ref, ulp16(ref)) }
			one(0, x+z)
			one(1, x-z)
			one(2, x*z)
			one(3, sig(x))
			one(4, z*z)
			one(5, x*cf[c])
			check(t, "oms", i, out(6, c, s), 1-sig(x), ulp16(1-sig(x))+ulp16(sig(x))/2)
			sm := math.Exp(x-smax) / ssum
			check(t, "softmax", i, out(7, c, s), sm, ulp16(sm))
			rs += x * z
			rsMag += ulp16(x*z) / 2
		}
		check(t, "reduce_sum", s, float64(f16ToF32(y[512*S+s])), rs, rsMag+ulp16(rs))
	}
}

var partNames = []string{"add", "sub", "mul", "sigmoid", "pow", "mul_channel"}

// TestSimAttention: slice_by_size, reshape, transpose, matmul (plain, transpose_x and
// transpose_y), scalar mul, broadcast add of a BLOBFILE causal mask, softmax over the last axis.
// The reference is float64 causal attention. Bound: the scores (|q·k|/4 <= 4) are rounded
// twice (<= 4·2·2^-11 = 0.004), which moves each softmax weight by at most ~0.8 % relative; with
// |v| <= 1 that is < 0.008 on the output, plus the rounding of p and of the output: 0.012.
func TestSimAttention(t *testing.T) {
	r := newRand(3)
	const S, H, D = 32, 2, 16
	x := randF16(r, 96*S, 1)
	mask := make([]uint16, S*S)
	for i := 0; i < S; i++ {
		for j := 0; j < S; j++ {
			if j > i {
				mask[i*S+j] = f32ToF16(-65504)
			}
		}
	}
	e := compileText(t, readTestdata(t, "sim_attention.mil"), map[string][]byte{
		"@model_path/weights/mask.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, f16Bytes(mask)),
	})
	y := make([]uint16, 32*S)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	xf := f64s(x)
	// Channel h*D+d of q at position s is x[(h*D+d)*S+s]; k and v follow at +32 and +64.
	at := func(part, h, d, s int) float64 { return xf[(part*32+h*D+d)*S+s] }
	for h := 0; h < H; h++ {
		for i := 0; i < S; i++ {
			sc := make([]float64, i+1)
			m := math.Inf(-1)
			for j := 0; j <= i; j++ {
				for d := 0; d < D; d++ {
					sc[j] += at(0, h, d, i) * at(1, h, d, j)
				}
				sc[j] *= 0.25
				m = math.Max(m, sc[j])
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - m)
				sum += sc[j]
			}
			for d := 0; d < D; d++ {
				var o float64
				for j := range sc {
					o += sc[j] / sum * at(2, h, d, j)
				}
				idx := (h*D+d)*S + i
				check(t, "attention", idx, float64(f16ToF32(y[idx])), o, 0.012)
			}
		}
	}
}

// TestSimRMSNormIOS16 runs the old program(1.0)/ios16 syntax (tensor<string, []> scalars, a
// // comment, fp32 I/O at S = 16 with casts) through RMSNorm and a projection. Bound: the
// normalised input passes five fp16 roundings (sq, ss, ms, rrms, xr, xn: ~6·2^-11 relative),
// the conv result one more; tolerance 8·2^-11·Σ|W·xn| + half an ulp.
func TestSimRMSNormIOS16(t *testing.T) {
	r := newRand(4)
	const C, O, S = 64, 32, 16
	rw := randF16(r, C, 1.5)
	w := randF16(r, O*C, 0.2)
	blob := writeBlob(t, []blobfile.DType{blobfile.FP16, blobfile.FP16}, f16Bytes(rw), f16Bytes(w))
	e := compileText(t, readTestdata(t, "sim_rmsnorm_ios16.mil"), map[string][]byte{"@model_path/weights/weight.bin": blob})
	x := make([]float32, C*S)
	for i := range x {
		x[i] = float32(2*r.Float64()-1) * 2
	}
	y := make([]float32, O*S)
	if err := e.EvalFloat([][]float32{x}, [][]float32{y}); err != nil {
		t.Fatal(err)
	}
	rwf, wf := f64s(rw), f64s(w)
	for s := 0; s < S; s++ {
		var ss float64
		xs := make([]float64, C)
		for c := 0; c < C; c++ {
			xs[c] = float64(round16(x[c*S+s])) // the program's first op casts the input to fp16
			ss += xs[c] * xs[c]
		}
		rr := 1 / math.Sqrt(ss/C+1e-5)
		for o := 0; o < O; o++ {
			var ref, mag float64
			for c := 0; c < C; c++ {
				v := wf[o*C+c] * xs[c] * rr * rwf[c]
				ref += v
				mag += math.Abs(v)
			}
			check(t, "y", o*S+s, float64(y[o*S+s]), ref, 8*u16*mag+ulp16(ref)/2)
		}
	}
}

// conv2 returns y = W2·(W1·x) in float64 with the magnitudes Σ|W2|·Σ|W1·x| for the bound.
func conv2(w1, w2, x []float64, o1, i1, o2, s int) (y, mag []float64) {
	h := make([]float64, o1*s)
	hm := make([]float64, o1*s)
	for o := 0; o < o1; o++ {
		for k := 0; k < s; k++ {
			for i := 0; i < i1; i++ {
				h[o*s+k] += w1[o*i1+i] * x[i*s+k]
				hm[o*s+k] += math.Abs(w1[o*i1+i] * x[i*s+k])
			}
		}
	}
	y = make([]float64, o2*s)
	mag = make([]float64, o2*s)
	for o := 0; o < o2; o++ {
		for k := 0; k < s; k++ {
			for i := 0; i < o1; i++ {
				y[o*s+k] += w2[o*o1+i] * h[i*s+k]
				mag[o*s+k] += math.Abs(w2[o*o1+i]) * hm[i*s+k]
			}
		}
	}
	return y, mag
}

func evalF16(t *testing.T, e *Executable, x []uint16, outN int) []float64 {
	t.Helper()
	y := make([]uint16, outN)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	return f64s(y)
}

// TestSimAffineDequantizeIOS16 runs the attribute-style constexpr_affine_dequantize of the
// old syntax: int8 weights with a per-channel fp16 scale vector from the blob and a scalar
// zero point, then uint8 weights with a scalar hex-float scale and a per-channel uint8 zero
// point vector from the blob. Bound: dequantized weights rounded to fp16 (2^-11), h rounded,
// y rounded: 4·2^-11·Σ|W2|·Σ|W1·x| + half an ulp.
func TestSimAffineDequantizeIOS16(t *testing.T) {
	r := newRand(5)
	q1 := make([]byte, 32*64)
	q2 := make([]byte, 16*32)
	zp2 := make([]byte, 16)
	for i := range q1 {
		q1[i] = byte(r.IntN(256))
	}
	for i := range q2 {
		q2[i] = byte(r.IntN(256))
	}
	for i := range zp2 {
		zp2[i] = byte(100 + r.IntN(56))
	}
	s1 := make([]uint16, 32)
	for i := range s1 {
		s1[i] = f32ToF16(float32(0.002 + 0.01*r.Float64()))
	}
	blob := writeBlob(t, []blobfile.DType{blobfile.Int8, blobfile.FP16, blobfile.UInt8, blobfile.UInt8}, q1, f16Bytes(s1), q2, zp2)
	e := compileText(t, readTestdata(t, "sim_affine_ios16.mil"), map[string][]byte{"@model_path/weights/weight.bin": blob})
	x := randF16(r, 64*32, 1)
	got := evalF16(t, e, x, 16*32)
	w1 := make([]float64, 32*64)
	for i := range w1 {
		w1[i] = float64(int8(q1[i])) * float64(f16ToF32(s1[i/64]))
	}
	w2 := make([]float64, 16*32)
	for i := range w2 {
		w2[i] = (float64(q2[i]) - float64(zp2[i/32])) / 16
	}
	ref, mag := conv2(w1, w2, f64s(x), 32, 64, 16, 32)
	for i := range ref {
		check(t, "y", i, got[i], ref[i], 4*u16*mag[i]+ulp16(ref[i])/2)
	}
}

// TestSimBlockwiseShiftScaleIOS18 runs constexpr_blockwise_shift_scale with int8 data, a
// [32, 4, 1, 1] scale (blocks of 16 input channels) and an int8 offset, then int4 data (two
// per byte, low nibble first) with a per-row scale. Bound as for the affine test.
func TestSimBlockwiseShiftScaleIOS18(t *testing.T) {
	r := newRand(6)
	d1 := make([]byte, 32*64)
	for i := range d1 {
		d1[i] = byte(r.IntN(256))
	}
	s1 := make([]uint16, 32*4)
	for i := range s1 {
		s1[i] = f32ToF16(float32(0.002 + 0.01*r.Float64()))
	}
	o1 := make([]byte, 32*4)
	for i := range o1 {
		o1[i] = byte(int8(r.IntN(21) - 10))
	}
	d2 := make([]byte, 16*32/2)
	for i := range d2 {
		d2[i] = byte(r.IntN(256))
	}
	s2 := make([]uint16, 16)
	for i := range s2 {
		s2[i] = f32ToF16(float32(0.01 + 0.05*r.Float64()))
	}
	blob := writeBlob(t, []blobfile.DType{blobfile.Int8, blobfile.FP16, blobfile.Int8, blobfile.Int4, blobfile.FP16},
		d1, f16Bytes(s1), o1, d2, f16Bytes(s2))
	e := compileText(t, readTestdata(t, "sim_blockwise_ios18.mil"), map[string][]byte{"@model_path/weights/weight.bin": blob})
	x := randF16(r, 64*32, 1)
	got := evalF16(t, e, x, 16*32)
	w1 := make([]float64, 32*64)
	for i := range w1 {
		o, c := i/64, i%64
		blk := o*4 + c/16
		w1[i] = float64(f16ToF32(s1[blk])) * (float64(int8(d1[i])) - float64(int8(o1[blk])))
	}
	w2 := make([]float64, 16*32)
	for i := range w2 {
		nib := int(d2[i/2] >> (4 * (i % 2)) & 0xF)
		if nib >= 8 {
			nib -= 16
		}
		w2[i] = float64(f16ToF32(s2[i/32])) * float64(nib)
	}
	ref, mag := conv2(w1, w2, f64s(x), 32, 64, 16, 32)
	for i := range ref {
		check(t, "y", i, got[i], ref[i], 4*u16*mag[i]+ulp16(ref[i])/2)
	}
}

// TestSimLUTToDenseIOS16 runs the iOS16 constexpr_lut_to_dense (4-bit codes, low nibble
// first, 16 fp16 centroids, uint32 shape). The dense weights are exact, so the bound is one
// rounding of the result plus float32 accumulation.
func TestSimLUTToDenseIOS16(t *testing.T) {
	r := newRand(7)
	idx := make([]byte, 32*64/2)
	for i := range idx {
		idx[i] = byte(r.IntN(256))
	}
	lut := randF16(r, 16, 0.3)
	blob := writeBlob(t, []blobfile.DType{blobfile.UInt8, blobfile.FP16}, idx, f16Bytes(lut))
	e := compileText(t, readTestdata(t, "sim_lut_ios16.mil"), map[string][]byte{"@model_path/weights/weight.bin": blob})
	x := randF16(r, 64*32, 1)
	got := evalF16(t, e, x, 32*32)
	lf, xf := f64s(lut), f64s(x)
	for o := 0; o < 32; o++ {
		for s := 0; s < 32; s++ {
			var ref, mag float64
			for i := 0; i < 64; i++ {
				k := o*64 + i
				w := lf[idx[k/2]>>(4*(k%2))&0xF]
				ref += w * xf[i*32+s]
				mag += math.Abs(w * xf[i*32+s])
			}
			check(t, "y", o*32+s, got[o*32+s], ref, ulp16(ref)/2+mag*1e-6)
		}
	}
}

// TestWideInternalTensors runs a program whose internal tensors are wider than its I/O rows
// (reshape [1, 64, 1, 32] -> [1, 1, 32, 64], sigmoid, back) plus a constant reduce_sum over
// the last axis that is folded at compile time: every element must be computed.
func TestWideInternalTensors(t *testing.T) {
	lines := []string{
		`tensor<int32, [4]> w = const()[name = string("w"), val = tensor<int32, [4]>([1, 1, 32, 64])];`,
		`tensor<int32, [4]> n = const()[name = string("n"), val = tensor<int32, [4]>([1, 64, 1, 32])];`,
		`tensor<fp16, [1, 1, 32, 64]> xw = reshape(shape = w, x = x)[name = string("xw")];`,
		`tensor<fp16, [1, 1, 32, 64]> sw = sigmoid(x = xw)[name = string("sw")];`,
		`tensor<fp16, [1, 64, 1, 32]> s = reshape(shape = n, x = sw)[name = string("s")];`,
		`tensor<fp16, [1, 1, 2, 64]> c = const()[name = string("c"), val = tensor<fp16, [1, 1, 2, 64]>(BLOBFILE(path = string("c.bin"), offset = uint64(64)))];`,
		`tensor<int32, [1]> ax = const()[name = string("ax"), val = tensor<int32, [1]>([3])];`,
		`tensor<fp16, [1, 1, 2]> cs = reduce_sum(x = c, axes = ax)[name = string("cs")];`,
		`tensor<int32, [3]> b0 = const()[name = string("b0"), val = tensor<int32, [3]>([0, 0, 0])];`,
		`tensor<int32, [3]> s1 = const()[name = string("s1"), val = tensor<int32, [3]>([1, 1, 1])];`,
		`tensor<fp16, [1, 1, 1]> c0 = slice_by_size(x = cs, begin = b0, size = s1)[name = string("c0")];`,
		`tensor<fp16, [1, 64, 1, 32]> y = add(x = s, y = c0)[name = string("y")];`,
	}
	text := refuseHeader + "tensor<fp16, [1, 64, 1, 32]> x) {\n        " + strings.Join(lines, "\n        ") + "\n    } -> (y);\n}\n"
	r := newRand(11)
	cv := randF16(r, 128, 0.1)
	e := compileText(t, []byte(text), map[string][]byte{"c.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, f16Bytes(cv))})
	if e.ColumnLocal() {
		t.Error("a program with 64-wide internal rows reported column-local")
	}
	x := randF16(r, 64*32, 3)
	y := evalF16(t, e, x, 64*32)
	var c0 float64 // Σ of the first row of c, folded at compile time and rounded to fp16
	for _, v := range f64s(cv[:64]) {
		c0 += v
	}
	c0 = float64(round16(float32(c0)))
	for i, v := range f64s(x) {
		sig := 1 / (1 + math.Exp(-v))
		check(t, "y", i, y[i], sig+c0, ulp16(sig+c0)+ulp16(sig)/2)
	}
}
