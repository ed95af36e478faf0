package mil

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
)

// denseProgram wraps a statement defining the constant w (of n elements) into a runnable
// program: y [1, n, 1, 32] = x + reshape(w, [1, n, 1, 1]), so that with x = 0 every column
// of y is w.
func denseProgram(header, opset, wType, wStmt string, n int) string {
	str := func(s string) string { return `string("` + s + `")` }
	shape := fmt.Sprintf("tensor<int32, [4]>([1, %d, 1, 1])", n)
	shapeType := "tensor<int32, [4]>"
	if opset != "ios18" {
		str = func(s string) string { return `tensor<string, []>("` + s + `")` }
	}
	io := fmt.Sprintf("tensor<fp16, [1, %d, 1, 32]>", n)
	return header + "\n{\n    func main<" + opset + ">(" + io + " x) {\n" +
		"        " + wType + " w = " + wStmt + "\n" +
		"        " + shapeType + " s = const()[name = " + str("s") + ", val = " + shape + "];\n" +
		fmt.Sprintf("        tensor<fp16, [1, %d, 1, 1]> wr = reshape(shape = s, x = w)[name = %s];\n", n, str("wr")) +
		"        " + io + " y = add(x = x, y = wr)[name = " + str("y") + "];\n" +
		"    } -> (y);\n}\n"
}

// denseValues compiles text and returns column 0 of y for x = 0: the dense weights.
func denseValues(t *testing.T, text string, weights map[string][]byte, n int) []float64 {
	t.Helper()
	e := compileText(t, []byte(text), weights)
	y := evalF16(t, e, make([]uint16, n*32), n*32)
	out := make([]float64, n)
	for c := range out {
		out[c] = y[c*32]
	}
	return out
}

func equalFloats(got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestLUTToDenseIOS18 runs the iOS18 constexpr_lut_to_dense on the two examples of its
// specification (coremltools iOS18 compression.py): a 2-group 2-bit scalar palettization of
// [6, 2] indices, and a 1-bit vector palettization with vectors of 3 along axis 1 and along
// axis 2, with indices as inline literals and from a uint2 blob record.
func TestLUTToDenseIOS18(t *testing.T) {
	const h18 = "program(1.3)"
	// Case 1: indices [6, 2], lut [2, 1, 4, 1]: rows 0-2 use the first table, rows 3-5 the second.
	lut1 := "lut = tensor<fp16, [2, 1, 4, 1]>([1.0, 5.0, 9.0, 13.0, 2.0, 10.0, 18.0, 26.0])"
	idx1 := []int{2, 3, 3, 0, 1, 0, 3, 0, 2, 1, 0, 3}
	want1 := []float64{9, 13, 13, 1, 5, 1, 26, 2, 18, 10, 2, 26}
	var lits []string
	for _, v := range idx1 {
		lits = append(lits, fmt.Sprint(v))
	}
	inline := denseProgram(h18, "ios18", "tensor<fp16, [6, 2]>",
		"constexpr_lut_to_dense(indices = tensor<uint2, [6, 2]>(["+strings.Join(lits, ", ")+"]), "+lut1+`)[name = string("w")];`, 12)
	if got := denseValues(t, inline, nil, 12); !equalFloats(got, want1) {
		t.Errorf("case 1, inline indices: %v; want %v", got, want1)
	}
	packed := make([]byte, 3) // 12 2-bit codes, least significant bits first
	for i, v := range idx1 {
		packed[i/4] |= byte(v) << (2 * (i % 4))
	}
	blob := writeBlob(t, []blobfile.DType{10}, packed) // 10: uint2
	fromBlob := denseProgram(h18, "ios18", "tensor<fp16, [6, 2]>",
		`constexpr_lut_to_dense(indices = tensor<uint2, [6, 2]>(BLOBFILE(path = string("@model_path/weights/w.bin"), offset = uint64(64))), `+lut1+`)[name = string("w")];`, 12)
	if got := denseValues(t, fromBlob, map[string][]byte{"@model_path/weights/w.bin": blob}, 12); !equalFloats(got, want1) {
		t.Errorf("case 1, blob indices: %v; want %v", got, want1)
	}

	// Case 2: indices uint1 [2, 2, 2] = [[[0, 0], [1, 0]], [[1, 1], [0, 0]]], centroids
	// a = (1, 2, 3), b = (4, 5, 6).
	idx2 := "indices = tensor<uint1, [2, 2, 2]>([0, 0, 1, 0, 1, 1, 0, 0])"
	lut2 := "lut = tensor<fp16, [1, 1, 1, 2, 3]>([1, 2, 3, 4, 5, 6])"
	a0, a1, a2, b0, b1, b2 := 1.0, 2.0, 3.0, 4.0, 5.0, 6.0
	want21 := []float64{ // [2, 6, 2]
		a0, a0, a1, a1, a2, a2, b0, a0, b1, a1, b2, a2,
		b0, b0, b1, b1, b2, b2, a0, a0, a1, a1, a2, a2,
	}
	want22 := []float64{ // [2, 2, 6]
		a0, a1, a2, a0, a1, a2, b0, b1, b2, a0, a1, a2,
		b0, b1, b2, b0, b1, b2, a0, a1, a2, a0, a1, a2,
	}
	for _, c := range []struct {
		axis  int
		shape string
		want  []float64
	}{{1, "[2, 6, 2]", want21}, {2, "[2, 2, 6]", want22}, {-1, "[2, 2, 6]", want22}} {
		text := denseProgram(h18, "ios18", "tensor<fp16, "+c.shape+">",
			fmt.Sprintf(`constexpr_lut_to_dense(%s, %s, vector_axis = int32(%d))[name = string("w")];`, idx2, lut2, c.axis), 24)
		if got := denseValues(t, text, nil, 24); !equalFloats(got, c.want) {
			t.Errorf("case 2, vector_axis %d: %v; want %v", c.axis, got, c.want)
		}
	}

	refuse := func(name, stmt, wType, msg string) {
		t.Helper()
		p, err := Parse([]byte(denseProgram(h18, "ios18", wType, stmt, 24)))
		if err == nil {
			_, err = p.Compile(nil)
		}
		if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want a type error mentioning %q", name, err, msg)
		}
	}
	refuse("vector without vector_axis", `constexpr_lut_to_dense(`+idx2+", "+lut2+`)[name = string("w")];`, "tensor<fp16, [2, 2, 6]>", "vector_axis must say")
	refuse("wrong table size", `constexpr_lut_to_dense(indices = tensor<uint2, [2, 2, 2]>([0, 0, 1, 0, 1, 1, 0, 0]), `+lut2+`, vector_axis = int32(2))[name = string("w")];`, "tensor<fp16, [2, 2, 6]>", "codes need 4")
	refuse("lut rank", `constexpr_lut_to_dense(`+idx2+`, lut = tensor<fp16, [2, 3]>([1, 2, 3, 4, 5, 6]), vector_axis = int32(2))[name = string("w")];`, "tensor<fp16, [2, 2, 6]>", "two dimensions more")
	refuse("iOS16 form in ios18", `constexpr_lut_to_dense()[indices = tensor<uint8, [1]>([6]), lut = tensor<fp16, [4]>([1, 2, 3, 4]), name = string("w"), shape = tensor<uint32, [1]>([4])];`, "tensor<fp16, [4]>", "iOS18 op")
}

// TestLUTToDenseIOS16 checks the iOS16 packing (codes least significant bit first, a code
// that crosses a byte continues in the next) on the 2-bit example of its specification and
// 6-bit codes, and that only 2, 4, 16, 64 or 256 entries are accepted.
func TestLUTToDenseIOS16(t *testing.T) {
	const h16 = "program(1.0)"
	stmt := func(idx []byte, lutN, n int) string {
		var b, l []string
		for _, v := range idx {
			b = append(b, fmt.Sprint(v))
		}
		for i := 0; i < lutN; i++ {
			l = append(l, fmt.Sprint(i))
		}
		return fmt.Sprintf(`constexpr_lut_to_dense()[indices = tensor<uint8, [%d]>([%s]), lut = tensor<fp16, [%d]>([%s]), name = tensor<string, []>("w"), shape = tensor<uint32, [1]>([%d])];`,
			len(idx), strings.Join(b, ", "), lutN, strings.Join(l, ", "), n)
	}
	// 2-bit, shape [5]: byte 0 = i3 i2 i1 i0 = 01 10 11 00, byte 1 = xx xx xx 11.
	text := denseProgram(h16, "ios16", "tensor<fp16, [5]>", stmt([]byte{0b01_10_11_00, 0b11}, 4, 5), 5)
	if got, want := denseValues(t, text, nil, 5), []float64{0, 3, 2, 1, 3}; !equalFloats(got, want) {
		t.Errorf("2-bit codes %v; want %v", got, want)
	}
	// 6-bit codes 5, 60, 33, 18: bits 0-5, 6-11, 12-17, 18-23 of a little-endian stream.
	codes := []uint32{5, 60, 33, 18}
	var stream uint32
	for i, c := range codes {
		stream |= c << (6 * i)
	}
	text = denseProgram(h16, "ios16", "tensor<fp16, [4]>", stmt([]byte{byte(stream), byte(stream >> 8), byte(stream >> 16)}, 64, 4), 4)
	if got, want := denseValues(t, text, nil, 4), []float64{5, 60, 33, 18}; !equalFloats(got, want) {
		t.Errorf("6-bit codes %v; want %v", got, want)
	}
	for _, size := range []int{8, 32, 128} {
		p, err := Parse([]byte(denseProgram(h16, "ios16", "tensor<fp16, [4]>", stmt(make([]byte, 2), size, 4), 4)))
		if err == nil {
			_, err = p.Compile(nil)
		}
		if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "2, 4, 16, 64 or 256") {
			t.Errorf("lut of %d entries: %v; want a refusal", size, err)
		}
	}
}

// TestConstexprArithmetic checks the roundings of coremltools' reference decompression:
// affine dequantization in float32 rounded once to fp16 (with an fp32 zero point), and the
// blockwise shift-scale rounding the subtraction and the product to fp16 each.
func TestConstexprArithmetic(t *testing.T) {
	// Affine: q = [3, -7, 100, 127], zero point 0.3 (fp32), scale 0.0999 (fp16: 0.0999755859375).
	text := denseProgram("program(1.3)", "ios18", "tensor<fp16, [4]>",
		`constexpr_affine_dequantize()[axis = int32(0), name = string("w"), quantized_data = tensor<int8, [4]>([3, -7, 100, 127]), scale = fp16(0.0999), zero_point = fp32(0.3)];`, 4)
	got := denseValues(t, text, nil, 4)
	s := round16(0.0999)
	for i, q := range []float32{3, -7, 100, 127} {
		if want := float64(round16(s * (q - 0.3))); got[i] != want {
			t.Errorf("affine %d: %v; want %v", i, got[i], want)
		}
	}
	// Blockwise: uint4 data [4] = [15, 0, 7, 9] in 2 blocks, fp16 offsets (7.3, 0.55), fp16
	// scales (1.7, 0.013): out = fp16(scale · fp16(data − offset)).
	text = denseProgram("program(1.3)", "ios18", "tensor<fp16, [4]>",
		`constexpr_blockwise_shift_scale(data = tensor<uint4, [4]>([15, 0, 7, 9]), offset = tensor<fp16, [2]>([7.3, 0.55]), scale = tensor<fp16, [2]>([1.7, 0.013]))[name = string("w")];`, 4)
	got = denseValues(t, text, nil, 4)
	off := []float32{round16(7.3), round16(0.55)}
	sc := []float32{round16(1.7), round16(0.013)}
	for i, d := range []float32{15, 0, 7, 9} {
		want := float64(round16(sc[i/2] * round16(d-off[i/2])))
		if got[i] != want {
			t.Errorf("blockwise %d: %v; want %v", i, got[i], want)
		}
	}

	refuse := func(name, stmt, msg string) {
		t.Helper()
		p, err := Parse([]byte(denseProgram("program(1.3)", "ios18", "tensor<fp16, [4]>", stmt, 4)))
		if err == nil {
			_, err = p.Compile(nil)
		}
		if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want a type error mentioning %q", name, err, msg)
		}
	}
	refuse("integer offset of another dtype", `constexpr_blockwise_shift_scale(data = tensor<uint4, [4]>([15, 0, 7, 9]), offset = tensor<int8, [2]>([1, 2]), scale = tensor<fp16, [2]>([1.7, 0.013]))[name = string("w")];`, "data's dtype uint4")
	refuse("affine without axis", `constexpr_affine_dequantize()[name = string("w"), quantized_data = tensor<int8, [4]>([3, -7, 100, 127]), scale = fp16(0.1), zero_point = int8(0)];`, "missing parameter axis")
	refuse("affine uint4", `constexpr_affine_dequantize()[axis = int32(0), name = string("w"), quantized_data = tensor<uint4, [4]>([3, 7, 10, 12]), scale = fp16(0.1), zero_point = uint4(0)];`, "int8 or uint8")
}
