package milgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/mil"
)

// The header every generated program starts with (docs/ane.md), byte for byte what MDX,
// AI and M0AT hand to the compiler.
const (
	milVersionLine = "program(1.3)"
	milBuildInfo   = `[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]`
)

// milWriter builds one program's text: 4-space indented function, 8-space statements, every
// op parameter a named const, every statement named after its variable (names are unique
// because variables are).
type milWriter struct {
	b    strings.Builder
	seen map[string]bool
}

func newMILWriter() *milWriter {
	w := &milWriter{seen: map[string]bool{}}
	w.b.WriteString(milVersionLine + "\n" + milBuildInfo + "\n{\n")
	return w
}

// open writes `func main<ios18>(<inputs>) {`.
func (w *milWriter) open(inputs ...mil.IO) {
	w.b.WriteString("    func main<ios18>(")
	for i, in := range inputs {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.WriteString(in.Type.String() + " " + in.Name)
		w.seen[in.Name] = true
	}
	w.b.WriteString(") {\n")
}

// close writes the output list and the closing braces and returns the text.
func (w *milWriter) close(outputs ...string) string {
	w.b.WriteString("    } -> (" + strings.Join(outputs, ", ") + ");\n}\n")
	return w.b.String()
}

func (w *milWriter) define(name string) {
	if w.seen[name] {
		panic("milgen: generator defines " + name + " twice") // a bug in this package, not bad input
	}
	w.seen[name] = true
}

// constant writes `<type> <name> = const()[name = string("<name>"), val = <literal>];`.
func (w *milWriter) constant(t mil.Type, name, literal string) {
	w.define(name)
	fmt.Fprintf(&w.b, "        %s %s = const()[name = string(%q), val = %s];\n", t, name, name, literal)
}

// op writes `<type> <name> = <op>(<k> = <v>, ...)[name = string("<name>")];`; args alternate
// parameter names and values, in the order given (callers pass them alphabetically).
func (w *milWriter) op(t mil.Type, name, op string, args ...string) {
	w.define(name)
	fmt.Fprintf(&w.b, "        %s %s = %s(", t, name, op)
	for i := 0; i+1 < len(args); i += 2 {
		if i > 0 {
			w.b.WriteString(", ")
		}
		w.b.WriteString(args[i] + " = " + args[i+1])
	}
	fmt.Fprintf(&w.b, ")[name = string(%q)];\n", name)
}

// convConsts writes the five conv parameters of a 1x1 linear layer.
func (w *milWriter) convConsts() {
	w.constant(mil.TensorType(mil.String), "c_pad_type", `string("valid")`)
	w.constant(mil.TensorType(mil.Int32, 2), "c_strides", intsLiteral(1, 1))
	w.constant(mil.TensorType(mil.Int32, 4), "c_pad", intsLiteral(0, 0, 0, 0))
	w.constant(mil.TensorType(mil.Int32, 2), "c_dilations", intsLiteral(1, 1))
	w.constant(mil.TensorType(mil.Int32), "c_groups", "int32(1)")
}

// conv writes a 1x1 convolution of x by weight into an [1, out, 1, seq] fp16 tensor.
func (w *milWriter) conv(name, weight, x string, out, seq int) {
	w.op(mil.TensorType(mil.FP16, 1, out, 1, seq), name, "conv",
		"dilations", "c_dilations", "groups", "c_groups", "pad", "c_pad", "pad_type", "c_pad_type",
		"strides", "c_strides", "weight", weight, "x", x)
}

// weight writes the fp16 weight name from its blob records: a constant, or, for a quantized
// weight, the constexpr op that expands its data (the compiler folds it; the records stay the
// ones the CPU reads):
//
//	q8: constexpr_affine_dequantize, the iOS16 attribute form (the quantized op with
//	    independent reports of compiling in memory): scale[o]·(q[o, i] − 0), int8 data
//	q4: constexpr_blockwise_shift_scale, the iOS18 form with its inputs bound inline:
//	    scale[o, g]·(q[o, i] − offset[o, g]) over groups g of inputs, uint4 data
func (w *milWriter) weight(name string, r weightRec) {
	t := mil.TensorType(mil.FP16, r.spec.Shape...)
	switch r.spec.Quant {
	case dtype.Q8:
		w.define(name)
		data := mil.TensorType(mil.Int8, r.spec.Shape...)
		scale := mil.TensorType(mil.FP16, r.scaleRec.spec.Shape...)
		fmt.Fprintf(&w.b, "        %s %s = constexpr_affine_dequantize()[axis = int32(0), name = string(%q), quantized_data = %s, scale = %s, zero_point = int8(0)];\n",
			t, name, name, blobLiteral(data, r.path, r.offset), blobLiteral(scale, r.scaleRec.path, r.scaleRec.offset))
	case dtype.Q4:
		w.define(name)
		data := mil.TensorType(mil.UInt4, r.spec.Shape...)
		side := mil.TensorType(mil.FP16, r.scaleRec.spec.Shape...)
		fmt.Fprintf(&w.b, "        %s %s = constexpr_blockwise_shift_scale(data = %s, offset = %s, scale = %s)[name = string(%q)];\n",
			t, name, blobLiteral(data, r.path, r.offset), blobLiteral(side, r.offsetRec.path, r.offsetRec.offset),
			blobLiteral(side, r.scaleRec.path, r.scaleRec.offset), name)
	default:
		w.constant(t, name, blobLiteral(t, r.path, r.offset))
	}
}

func intsLiteral(v ...int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return fmt.Sprintf("tensor<int32, [%d]>([%s])", len(v), strings.Join(s, ", "))
}

func blobLiteral(t mil.Type, path string, offset int64) string {
	return fmt.Sprintf("%s(BLOBFILE(path = string(%q), offset = uint64(%d)))", t, path, offset)
}
