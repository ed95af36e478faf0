package mil

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/half"
)

// ExpandedPath is the weight file ExpandConstexpr adds: the dense fp16 weights of the
// program's constexpr ops, one record each, in statement order.
const ExpandedPath = "@model_path/weights/expanded.bin"

// ExpandConstexpr rewrites a program whose weights are compressed through constexpr ops
// (constexpr_affine_dequantize, constexpr_blockwise_shift_scale, constexpr_lut_to_dense) into
// one that reads the same weights dense: each such statement becomes a const of an fp16
// BLOBFILE record of ExpandedPath, holding exactly the values the op defines (computed by the
// simulator from the very records the op names). It is the fallback for a compiler that refuses
// the constexpr ops in memory: the bundle still ships the compressed bytes once, and the
// expansion costs compile-time memory only (the aned daemon caches the compiled program).
// Programs must use the ios18 syntax (program(1.3)) the generator writes. The returned weights
// hold exactly the files the new text names.
func ExpandConstexpr(text []byte, weights map[string][]byte) ([]byte, map[string][]byte, error) {
	p, err := Parse(text)
	if err != nil {
		return nil, nil, err
	}
	fn, err := p.checkHeader("")
	if err != nil {
		return nil, nil, err
	}
	if fn.Opset != "ios18" {
		return nil, nil, fmt.Errorf("mil: expanding constexpr ops: the function is %s; only ios18 programs are rewritten", fn.Opset)
	}
	vals, err := p.constexprValues(weights)
	if err != nil {
		return nil, nil, err
	}
	if _, taken := weights[ExpandedPath]; taken && len(vals) > 0 {
		return nil, nil, fmt.Errorf("mil: expanding constexpr ops: %q is already a weight file", ExpandedPath)
	}
	lines := bytes.SplitAfter(text, []byte("\n"))
	var entries []blobfile.Entry
	var payloads [][]byte
	for _, st := range fn.Stmts {
		if !strings.HasPrefix(st.Op, "constexpr_") {
			continue
		}
		v := vals[st.Var]
		if v == nil || st.Type.DType != FP16 {
			return nil, nil, stmtErr(st, ErrUnsupported, "cannot expand %s of type %s; only fp16 results are written", st.Op, st.Type)
		}
		ln := st.Pos.Line - 1
		if ln < 0 || ln >= len(lines) || !bytes.Contains(lines[ln], []byte(st.Var+" = "+st.Op)) {
			return nil, nil, stmtErr(st, ErrUnsupported, "cannot expand %s: the statement does not stand alone on its line", st.Op)
		}
		p := make([]byte, 2*len(v))
		for i, f := range v {
			h := half.F32ToF16Scalar(f)
			p[2*i], p[2*i+1] = byte(h), byte(h>>8)
		}
		entries = append(entries, blobfile.Entry{DType: blobfile.FP16, Size: int64(len(p))})
		payloads = append(payloads, p)
		lines[ln] = nil // replaced below, once the record offsets are known
	}
	if len(entries) == 0 {
		return text, weights, nil
	}
	recs, size := blobfile.Layout(entries)
	file := blobfile.AppendHeader(make([]byte, 0, size), len(recs))
	for i, r := range recs {
		file = blobfile.AppendRecord(file, r)
		file = append(file, payloads[i]...)
		file = append(file, make([]byte, pad64(len(file)))...)
	}
	k := 0
	for _, st := range fn.Stmts {
		if !strings.HasPrefix(st.Op, "constexpr_") {
			continue
		}
		t := st.Type.String()
		lines[st.Pos.Line-1] = fmt.Appendf(nil, "        %s %s = const()[name = string(%q), val = %s(BLOBFILE(path = string(%q), offset = uint64(%d)))];\n",
			t, st.Var, st.Var, t, ExpandedPath, recs[k].Offset)
		k++
	}
	out := bytes.Join(lines, nil)
	refs, err := blobRefs(out)
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{ExpandedPath: file}
	for _, r := range refs {
		if r.ref.Path != ExpandedPath {
			files[r.ref.Path] = weights[r.ref.Path]
		}
	}
	return out, files, nil
}

// pad64 returns how many zero bytes bring n to a multiple of 64.
func pad64(n int) int { return (64 - n%64) % 64 }

// constexprValues compiles the program's statements (folding every constant) and returns the
// float values of its constexpr ops, by variable.
func (p *Program) constexprValues(weights map[string][]byte) (map[string][]float32, error) {
	fn, err := p.checkHeader("")
	if err != nil {
		return nil, err
	}
	c := &compiler{prog: p, fn: fn, opts: CompileOptions{MaxElements: 1 << 30, MaxBytes: DefaultMaxBytes}, weights: weights,
		files: map[string]*blobfile.File{}, vars: map[string]*val{}, names: map[string]Pos{}, ios18: fn.Opset == "ios18"}
	c.ioMax = c.largestIO()
	if _, err := c.inputs(); err != nil {
		return nil, err
	}
	out := map[string][]float32{}
	for _, st := range fn.Stmts {
		if err := c.stmt(st); err != nil {
			return nil, err
		}
		if strings.HasPrefix(st.Op, "constexpr_") {
			v := c.vars[st.Var]
			if !v.konst {
				return nil, stmtErr(st, ErrType, "%s did not fold to a constant", st.Op)
			}
			out[st.Var] = c.floats(v)
		}
	}
	return out, nil
}
