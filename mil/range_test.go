package mil

import (
	"math"
	"testing"
)

// TestRange checks the fp16 headroom record: y = (x · 3) · 0.5 on a value of 30000 makes the
// intermediate t 90000, above fp16's 65504, although the output would be back in range in
// float32; rounded to fp16 t is infinite, and so is y, as on the ANE; EvalColumns records only the columns it computes; an
// executable compiled without TrackRange records nothing.
func TestRange(t *testing.T) {
	text := refuseHeader + "tensor<fp16, [1, 2, 1, 32]> x) {\n" +
		"        tensor<fp16, [1, 2, 1, 32]> t = mul(x = x, y = fp16(3))[name = string(\"t\")];\n" +
		"        tensor<fp16, [1, 2, 1, 32]> y = mul(x = t, y = fp16(0.5))[name = string(\"y\")];\n    } -> (y);\n}\n"
	p, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.CompileWith(nil, CompileOptions{TrackRange: true})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]uint16, 64)
	x[0] = f32ToF16(100)     // column 0
	x[33] = f32ToF16(-30000) // channel 1, column 1
	y := make([]uint16, 64)
	if err := e.EvalColumns([][]uint16{x}, [][]uint16{y}, 1); err != nil {
		t.Fatal(err)
	}
	if r := e.Range(); r.Max != 300 || r.Var != "t" || r.Op != "mul" || r.Overflows() || r.Evals != 1 || math.Abs(r.Headroom()-65504.0/300) > 1e-9 {
		t.Errorf("after one column: %+v", r)
	}
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	if r := e.Range(); !math.IsInf(float64(r.Max), 1) || r.Overflow != "t" || !r.Overflows() || r.Evals != 2 || r.Headroom() != 0 {
		t.Errorf("after the full evaluation: %+v", r)
	}
	plain, err := p.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	if r := plain.Range(); r != (Range{}) {
		t.Errorf("untracked executable recorded %+v", r)
	}
}
