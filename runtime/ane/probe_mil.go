package ane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/half"
)

// probeMIL writes the text of one probe program: a function of one fp16 input x
// [1, cin, 1, S] and one output y, in the modern syntax (program(1.3), ios18, scalars as
// `int32(1)`) or the old one (program(1.0), ios16, scalars as `tensor<int32, []>(1)`), with
// the conv parameters as named consts as the runtimes that ran on hardware write them.
type probeMIL struct {
	b   strings.Builder
	old bool
}

const probeSeq = 32 // S of every probe program: the smallest row the ANE computes correctly

func newProbeMIL(old bool, cin int) *probeMIL {
	w := &probeMIL{old: old}
	if old {
		w.b.WriteString("program(1.0)\n[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n")
		fmt.Fprintf(&w.b, "    func main<ios16>(tensor<fp16, [1, %d, 1, %d]> x) {\n", cin, probeSeq)
	} else {
		w.b.WriteString("program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"3510.2.1\"}, {\"coremlc-version\", \"3505.4.1\"}, {\"coremltools-component-milinternal\", \"\"}, {\"coremltools-version\", \"9.0\"}})]\n{\n")
		fmt.Fprintf(&w.b, "    func main<ios18>(tensor<fp16, [1, %d, 1, %d]> x) {\n", cin, probeSeq)
	}
	w.stmt("string", "c_pad_type", "const()", "val = "+w.str("valid"))
	w.stmt("tensor<int32, [2]>", "c_strides", "const()", "val = tensor<int32, [2]>([1, 1])")
	w.stmt("tensor<int32, [4]>", "c_pad", "const()", "val = tensor<int32, [4]>([0, 0, 0, 0])")
	w.stmt("tensor<int32, [2]>", "c_dilations", "const()", "val = tensor<int32, [2]>([1, 1])")
	w.stmt("int32", "c_groups", "const()", "val = "+w.scalar("int32", "1"))
	return w
}

// scalarType spells a scalar type in the program's syntax.
func (w *probeMIL) scalarType(t string) string {
	if w.old && !strings.HasPrefix(t, "tensor<") {
		return "tensor<" + t + ", []>"
	}
	return t
}

// scalar spells a scalar literal: int32(1) or tensor<int32, []>(1).
func (w *probeMIL) scalar(t, v string) string { return w.scalarType(t) + "(" + v + ")" }

func (w *probeMIL) str(s string) string { return w.scalar("string", strconv.Quote(s)) }

// blob spells a BLOBFILE literal of type t.
func (w *probeMIL) blob(t, path string, offset int64) string {
	return fmt.Sprintf("%s(BLOBFILE(path = %s, offset = %s))", t, w.str(path), w.scalar("uint64", strconv.FormatInt(offset, 10)))
}

// stmt writes `<type> <name> = <call>[name = "<name>", <attrs>];`.
func (w *probeMIL) stmt(typ, name, call, attrs string) {
	fmt.Fprintf(&w.b, "        %s %s = %s[name = %s", w.scalarType(typ), name, call, w.str(name))
	if attrs != "" {
		w.b.WriteString(", " + attrs)
	}
	w.b.WriteString("];\n")
}

// conv writes out = conv(weight = w, x = in) with out channels cout.
func (w *probeMIL) conv(out, in, weight string, cout int) {
	w.stmt(fmt.Sprintf("tensor<fp16, [1, %d, 1, %d]>", cout, probeSeq), out,
		fmt.Sprintf("conv(dilations = c_dilations, groups = c_groups, pad = c_pad, pad_type = c_pad_type, strides = c_strides, weight = %s, x = %s)", weight, in), "")
}

// text closes the function and the program.
func (w *probeMIL) text() []byte {
	w.b.WriteString("    } -> (y);\n}\n")
	return []byte(w.b.String())
}

// fp16Vector spells an inline fp16 vector literal.
func fp16Vector(v []uint16) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tensor<fp16, [%d]>([", len(v))
	for i, h := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(float64(half.F16ToF32Scalar(h)), 'g', -1, 32))
	}
	b.WriteString("])")
	return b.String()
}

// packBlob lays payloads out as one blob file and returns it with each record's offset.
func packBlob(dtypes []blobfile.DType, payloads ...[]byte) ([]byte, []int64) {
	entries := make([]blobfile.Entry, len(payloads))
	for i, p := range payloads {
		entries[i] = blobfile.Entry{DType: dtypes[i], Size: int64(len(p))}
	}
	recs, size := blobfile.Layout(entries)
	b := blobfile.AppendHeader(make([]byte, 0, size), len(recs))
	offsets := make([]int64, len(recs))
	for i, r := range recs {
		b = blobfile.AppendRecord(b, r)
		b = append(b, payloads[i]...)
		b = append(b, make([]byte, int(alignTo(int64(len(b)), blobfile.Align))-len(b))...)
		offsets[i] = r.Offset
	}
	return b, offsets
}

func alignTo(n, a int64) int64 { return (n + a - 1) / a * a }
