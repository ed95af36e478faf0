package mil

import (
	"errors"
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
)

const refuseHeader = "program(1.3)\n{\n    func main<ios18>("

// TestRefusals checks that every rule the sim enforces for the ANE refuses a program with an
// error of the right category naming the problem, and that the unmodified program compiles.
func TestRefusals(t *testing.T) {
	base := string(readTestdata(t, "gen_attn_o_s32.mil"))
	r := newRand(9)
	w16 := f16Bytes(randF16(r, 96*64, 0.1))
	good := map[string][]byte{"@model_path/weights/attn_o.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, w16)}
	fp32Rec := map[string][]byte{"@model_path/weights/attn_o.bin": writeBlob(t, []blobfile.DType{blobfile.FP32}, w16)}
	shortRec := map[string][]byte{"@model_path/weights/attn_o.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, w16[:len(w16)-2])}
	rms := string(readTestdata(t, "sim_rmsnorm_ios16.mil"))
	blockwiseBlob := writeBlob(t, []blobfile.DType{blobfile.Int8, blobfile.FP16, blobfile.Int8, blobfile.Int4, blobfile.FP16},
		make([]byte, 2048), make([]byte, 256), make([]byte, 128), make([]byte, 256), make([]byte, 32))
	// Two-output programs in the spirit of the Qwen "ANE Inference" fused QKV (docs/ane.md, "Inputs and outputs").
	twoOut := func(params, body, outs string) string {
		return refuseHeader + params + ") {\n" + body + "    } -> (" + outs + ");\n}\n"
	}
	qkvBody := "        tensor<fp16, [1, 64, 1, 32]> q = identity(x = x)[name = string(\"q\")];\n" +
		"        tensor<int32, [4]> b = const()[name = string(\"b\"), val = tensor<int32, [4]>([0, 0, 0, 0])];\n" +
		"        tensor<int32, [4]> z = const()[name = string(\"z\"), val = tensor<int32, [4]>([1, 32, 1, 32])];\n" +
		"        tensor<fp16, [1, 32, 1, 32]> k = slice_by_size(x = x, begin = b, size = z)[name = string(\"k\")];\n" +
		"        tensor<fp16, [1, 32, 1, 32]> v = slice_by_size(x = x, begin = b, size = z)[name = string(\"v\")];\n"
	x64 := "tensor<fp16, [1, 64, 1, 32]> x"

	cases := []struct {
		name    string
		text    string
		weights map[string][]byte
		kind    error
		msg     string
	}{
		{"baseline", base, good, nil, ""},
		{"fp16 S < 32", strings.ReplaceAll(base, "1, 32]", "1, 16]"), good, ErrANE, "multiple of 32"},
		{"fp16 S not a multiple of 32", strings.ReplaceAll(base, "1, 32]", "1, 48]"), good, ErrANE, "multiple of 32"},
		{"fp32 S < 16", strings.ReplaceAll(rms, "1, 16]", "1, 8]"), map[string][]byte{}, ErrANE, "multiple of 16"},
		{"rank-2 I/O", twoOut("tensor<fp16, [64, 32]> x", "        tensor<fp16, [64, 32]> y = identity(x = x)[name = string(\"y\")];\n", "y"), nil, ErrUnsupported, "rank-4"},
		{"int32 input", twoOut("tensor<int32, [1, 64, 1, 32]> x", "        tensor<int32, [1, 64, 1, 32]> y = identity(x = x)[name = string(\"y\")];\n", "y"), nil, ErrANE, "fp16 or fp32"},
		{"outputs of unequal sizes", twoOut(x64, qkvBody, "k, q"), nil, ErrANE, "equal sizes"},
		{"outputs not alphabetical", twoOut(x64, qkvBody, "v, k"), nil, ErrANE, "alphabetical"},
		{"inputs not alphabetical", twoOut(x64+", tensor<fp16, [1, 64, 1, 32]> a", "        tensor<fp16, [1, 64, 1, 32]> y = add(x = x, y = a)[name = string(\"y\")];\n", "y"), nil, ErrANE, "alphabetical"},
		{"unknown op", strings.Replace(base, "= conv(", "= gelu(", 1), good, ErrANE, `unknown op "gelu"`},
		{"offset names the payload", strings.Replace(base, "uint64(64)", "uint64(128)", 1), good, ErrWeights, "0xDEADBEEF"},
		{"offset past the end", strings.Replace(base, "uint64(64)", "uint64(1048576)", 1), good, ErrWeights, "past the end"},
		{"dtype code mismatch", base, fp32Rec, ErrWeights, "dtype code 2"},
		{"payload size mismatch", base, shortRec, ErrWeights, "needs 12288"},
		{"path missing", base, map[string][]byte{"@model_path/weights/other.bin": good["@model_path/weights/attn_o.bin"]}, ErrWeights, "not in the weights"},
		{"not a blob file", base, map[string][]byte{"@model_path/weights/attn_o.bin": make([]byte, 100)}, ErrWeights, "version"},
		{"program(1.0) with ios18", strings.Replace(base, "program(1.3)", "program(1.0)", 1), good, ErrANE, "program(1.3)"},
		{"program(1.5)", strings.Replace(base, "program(1.3)", "program(1.5)", 1), good, ErrUnsupported, "1.5"},
		{"unknown opset", strings.Replace(base, "<ios18>", "<ios99>", 1), good, ErrUnsupported, "opset"},
		{"conv groups 2", strings.Replace(base, "val = int32(1)", "val = int32(2)", 1), good, ErrUnsupported, "groups = 2"},
		{"conv strides 2", strings.Replace(base, "c_strides\"), val = tensor<int32, [2]>([1, 1])", "c_strides\"), val = tensor<int32, [2]>([2, 2])", 1), good, ErrUnsupported, "strides"},
		{"conv padding", strings.Replace(base, "([0, 0, 0, 0])", "([1, 0, 0, 0])", 1), good, ErrUnsupported, "pad"},
		{"conv 3x3 kernel", strings.ReplaceAll(base, "[96, 64, 1, 1]", "[96, 64, 3, 3]"), map[string][]byte{"@model_path/weights/attn_o.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, make([]byte, 96*64*9*2))}, ErrUnsupported, "1x1"},
		{"conv bias", strings.Replace(base, "weight = w_o, x = x)", "bias = w_o, weight = w_o, x = x)", 1), good, ErrUnsupported, "bias"},
		{"declared type differs", strings.Replace(base, "tensor<fp16, [1, 96, 1, 32]> y", "tensor<fp16, [1, 95, 1, 32]> y", 1), good, ErrType, "produces tensor<fp16, [1, 96, 1, 32]>"},
		{"duplicate op name", strings.Replace(base, `name = string("c_pad")`, `name = string("c_strides")`, 1), good, ErrANE, "already used"},
		{"duplicate variable", strings.Replace(base, "int32 c_groups =", "int32 c_pad =", 1), good, ErrType, "defined twice"},
		{"undefined variable", strings.Replace(base, "weight = w_o", "weight = w_x", 1), good, ErrType, "not defined"},
		{"unknown parameter", strings.Replace(base, "x = x)[name = string(\"y\")]", "x = x, alpha = x)[name = string(\"y\")]", 1), good, ErrType, `no parameter "alpha"`},
		{"runtime parameter", twoOut(x64, "        tensor<fp16, [1, 64, 1, 32]> y = softmax(axis = x, x = x)[name = string(\"y\")];\n", "y"), nil, ErrANE, "axis must be a constant"},
		{"input-style affine dequantize", twoOut(x64, "        tensor<int8, [64, 64, 1, 1]> q = const()[name = string(\"q\"), val = tensor<int8, [64, 64, 1, 1]>(BLOBFILE(path = string(\"@model_path/weights/w.bin\"), offset = uint64(64)))];\n"+
			"        tensor<fp16, [64, 64, 1, 1]> w = constexpr_affine_dequantize(axis = int32(0), quantized_data = q, scale = fp16(1.0), zero_point = int8(0))[name = string(\"w\")];\n"+
			"        tensor<fp16, [1, 64, 1, 32]> y = conv(weight = w, x = x)[name = string(\"y\")];\n", "y"),
			map[string][]byte{"@model_path/weights/w.bin": writeBlob(t, []blobfile.DType{blobfile.Int8}, make([]byte, 64*64))}, ErrANE, "bracket attributes"},
		{"lut with int32 shape", strings.Replace(string(readTestdata(t, "sim_lut_ios16.mil")), "shape = tensor<uint32, [4]>", "shape = tensor<int32, [4]>", 1), map[string][]byte{"@model_path/weights/weight.bin": writeBlob(t, []blobfile.DType{blobfile.UInt8, blobfile.FP16}, make([]byte, 1024), make([]byte, 32))}, ErrType, "uint32"},
		{"mixed dtypes", twoOut(x64+", tensor<fp32, [1, 64, 1, 32]> y", "        tensor<fp16, [1, 64, 1, 32]> z = add(x = x, y = y)[name = string(\"z\")];\n", "z"), nil, ErrType, "one dtype"},
		{"no broadcast", twoOut(x64, "        tensor<fp16, [1, 3, 1, 1]> c = const()[name = string(\"c\"), val = tensor<fp16, [1, 3, 1, 1]>([1, 2, 3])];\n        tensor<fp16, [1, 64, 1, 32]> y = add(x = x, y = c)[name = string(\"y\")];\n", "y"), nil, ErrType, "do not broadcast"},
		{"interleaved concat", twoOut(x64, "        bool t = const()[name = string(\"t\"), val = bool(true)];\n        int32 a = const()[name = string(\"a\"), val = int32(1)];\n        tensor<fp16, [1, 128, 1, 32]> y = concat(axis = a, interleave = t, values = (x, x))[name = string(\"y\")];\n", "y"), nil, ErrUnsupported, "interleave"},
		{"blockwise in ios16", strings.Replace(strings.Replace(string(readTestdata(t, "sim_blockwise_ios18.mil")), "<ios18>", "<ios16>", 1), "program(1.3)", "program(1.0)", 1), map[string][]byte{"@model_path/weights/weight.bin": blockwiseBlob}, ErrType, "iOS18 op"},
	}
	for _, c := range cases {
		p, err := Parse([]byte(c.text))
		if err == nil {
			_, err = p.Compile(c.weights)
		}
		if c.kind == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v; want %v mentioning %q", c.name, err, c.kind, c.msg)
		}
	}
}

// TestSizeLimit checks that MaxElements bounds what a program can make the sim allocate.
func TestSizeLimit(t *testing.T) {
	text := refuseHeader + "tensor<fp16, [1, 64, 1, 32]> x) {\n        tensor<int32, [4]> s = const()[name = string(\"s\"), val = tensor<int32, [4]>([1, 64, 1, 32])];\n" +
		"        tensor<fp16, [1, 4096, 4096, 4096]> z = const()[name = string(\"z\"), val = tensor<fp16, [1, 4096, 4096, 4096]>(BLOBFILE(path = string(\"w\"), offset = uint64(64)))];\n" +
		"        tensor<fp16, [1, 64, 1, 32]> y = identity(x = x)[name = string(\"y\")];\n    } -> (y);\n}\n"
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CompileWith(nil, CompileOptions{MaxElements: 1 << 20}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("got %v; want a size refusal", err)
	}
}

// TestSyntaxErrors checks that malformed text gives a SyntaxError with a position.
func TestSyntaxErrors(t *testing.T) {
	base := string(readTestdata(t, "gen_attn_o_s32.mil"))
	for name, text := range map[string]string{
		"empty":            "",
		"no program":       "func main<ios18>() {} -> ();",
		"unterminated":     base[:len(base)/2],
		"bad dimension":    strings.Replace(base, "[1, 64, 1, 32]", "[1, n, 1, 32]", 1),
		"bad dtype":        strings.Replace(base, "tensor<fp16, [1, 64", "tensor<fp17, [1, 64", 1),
		"literal count":    strings.Replace(base, "[2]>([1, 1])", "[2]>([1, 1, 1])", 1),
		"int out of range": strings.Replace(base, "int32(1)", "int32(4294967296)", 1),
		"string escape":    strings.Replace(base, `"valid"`, `"va\qlid"`, 1),
		"blobfile field":   strings.Replace(base, "offset = uint64(64)", "offs = uint64(64)", 1),
		"trailing":         base + "}",
		"stray char":       strings.Replace(base, "x = x", "x = $x", 1),
		"multi-result":     strings.Replace(base, "> y = conv(", "> y, tensor<fp16, [1]> z = conv(", 1),
	} {
		_, err := Parse([]byte(text))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Pos.Line == 0 {
			t.Errorf("%s: got %v; want a SyntaxError with a position", name, err)
		}
	}
}

// TestEvalChecks checks the run-time argument checks.
func TestEvalChecks(t *testing.T) {
	r := newRand(10)
	good := map[string][]byte{"@model_path/weights/attn_o.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, f16Bytes(randF16(r, 96*64, 0.1)))}
	e := compileText(t, readTestdata(t, "gen_attn_o_s32.mil"), good)
	x := make([]uint16, 64*32)
	if err := e.Eval([][]uint16{x[:10]}, [][]uint16{make([]uint16, 96*32)}); err == nil {
		t.Error("short input accepted")
	}
	if err := e.Eval([][]uint16{x}, [][]uint16{make([]uint16, 10)}); err == nil {
		t.Error("short output accepted")
	}
	if err := e.Eval(nil, nil); err == nil {
		t.Error("missing input accepted")
	}
	if _, err := e.Run(map[string][]uint16{"z": x}); err == nil {
		t.Error("wrong input name accepted")
	}
	out, err := e.Run(map[string][]uint16{"x": x})
	if err != nil || len(out["y"]) != 96*32 {
		t.Fatalf("Run: %v", err)
	}
	rms := compileText(t, readTestdata(t, "sim_rmsnorm_ios16.mil"), map[string][]byte{
		"@model_path/weights/weight.bin": writeBlob(t, []blobfile.DType{blobfile.FP16, blobfile.FP16}, make([]byte, 128), make([]byte, 4096)),
	})
	if err := rms.Eval([][]uint16{make([]uint16, 64*16)}, [][]uint16{make([]uint16, 32*16)}); err == nil {
		t.Error("Eval of an fp32-I/O program accepted; it needs EvalFloat")
	}
}

// TestFunctions compiles the chosen function of a multi-procedure program (docs/ane.md, "Program text");
// op names need only be unique within a function.
func TestFunctions(t *testing.T) {
	fn := func(name string) string {
		return "    func " + name + "<ios18>(tensor<fp16, [1, 64, 1, 32]> x) {\n" +
			"        tensor<fp16, [1, 64, 1, 32]> y = sigmoid(x = x)[name = string(\"y\")];\n    } -> (y);\n"
	}
	text := "program(1.3)\n{\n" + fn("main") + fn("layer1") + "}\n"
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "main", "layer1"} {
		if _, err := p.CompileWith(nil, CompileOptions{Function: name}); err != nil {
			t.Errorf("function %q: %v", name, err)
		}
	}
	if _, err := p.CompileWith(nil, CompileOptions{Function: "layer2"}); err == nil || !strings.Contains(err.Error(), "main, layer1") {
		t.Errorf("unknown function: %v", err)
	}
	dup, _ := Parse([]byte("program(1.3)\n{\n" + fn("main") + fn("main") + "}\n"))
	if _, err := dup.Compile(nil); !errors.Is(err, ErrType) {
		t.Errorf("duplicate function: %v", err)
	}
}
