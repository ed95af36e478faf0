package mil

import (
	"testing"

	"github.com/anepack/anepack/blobfile"
)

// TestEvalColumns checks that EvalColumns on a column-local program (the hand-written
// elementwise one; package milgen checks its generated programs) gives bit-for-bit the first
// columns of a full Eval, and that programs mixing columns (attention) report ColumnLocal false.
func TestEvalColumns(t *testing.T) {
	r := newRand(4)
	type prog struct {
		name string
		e    *Executable
		ins  [][]uint16
		outs []int
	}
	var progs []prog
	ew := compileText(t, readTestdata(t, "sim_elementwise.mil"), map[string][]byte{
		"@model_path/weights/scale.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, f16Bytes(randF16(r, 64, 1))),
	})
	progs = append(progs, prog{"sim_elementwise", ew, [][]uint16{randF16(r, 64*32, 2), randF16(r, 64*32, 2)}, []int{513 * 32}})
	for _, p := range progs {
		if !p.e.ColumnLocal() {
			t.Errorf("%s is not column-local", p.name)
			continue
		}
		full := make([][]uint16, len(p.outs))
		part := make([][]uint16, len(p.outs))
		for i, n := range p.outs {
			full[i], part[i] = make([]uint16, n), make([]uint16, n)
		}
		if err := p.e.Eval(p.ins, full); err != nil {
			t.Fatal(err)
		}
		for _, cols := range []int{1, 5} {
			for i := range part {
				clear(part[i])
			}
			if err := p.e.EvalColumns(p.ins, part, cols); err != nil {
				t.Fatal(err)
			}
			width := p.e.Outputs()[0].Type.Shape[3]
			for i := range part {
				for j := range part[i] {
					want := full[i][j]
					if j%width >= cols {
						want = 0 // untouched
					}
					if part[i][j] != want {
						t.Fatalf("%s cols %d: output %d[%d] = %#x; full Eval %#x", p.name, cols, i, j, part[i][j], want)
					}
				}
			}
		}
	}
	att := compileText(t, readTestdata(t, "sim_attention.mil"), map[string][]byte{
		"@model_path/weights/mask.bin": writeBlob(t, []blobfile.DType{blobfile.FP16}, make([]byte, 2048)),
	})
	if att.ColumnLocal() {
		t.Error("attention (matmul over positions) reported column-local")
	}
}
