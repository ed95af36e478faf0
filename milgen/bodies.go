package milgen

import (
	"fmt"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/mil"
)

// The program bodies. Each takes its weights as placed records and writes one input x and one
// output y, fp16 [1, C, 1, S], so that no multi-I/O binding order question arises.

func ioType(c, seq int) mil.Type { return mil.TensorType(mil.FP16, 1, c, 1, seq) }

// splitRecords separates a group's weight records from its bias records. A quantized weight's
// scale and offset records become its parts.
func splitRecords(recs []placedRecord) (weights []weightRec, biases []placedRecord) {
	for _, r := range recs {
		switch {
		case r.spec.Bias:
			biases = append(biases, r)
		case r.spec.Part == blobplan.PartScale:
			weights[len(weights)-1].scaleRec = r
		case r.spec.Part == blobplan.PartOffset:
			weights[len(weights)-1].offsetRec = r
		default:
			weights = append(weights, weightRec{placedRecord: r})
		}
	}
	return weights, biases
}

// weightRec is one weight's records: the data (or the plain weight) and, when quantized, its
// scale and offset.
type weightRec struct {
	placedRecord
	scaleRec, offsetRec placedRecord
}

// biasConst declares a [1, C, 1, 1] fp16 bias record as the constant b_<record name without
// "_bias"> and returns that name.
func (m *milWriter) biasConst(b placedRecord) string {
	name := "b_" + strings.TrimSuffix(b.spec.Name, "_bias")
	t := mil.TensorType(mil.FP16, b.spec.Shape...)
	m.constant(t, name, blobLiteral(t, b.path, b.offset))
	return name
}

// genConcat is y = concat(W1·x, W2·x, ...) + b: one 1x1 conv per weight record, concatenated
// along channels into a single output (several outputs of unequal sizes are what broke one
// fused path that ran on hardware, docs/ane.md), then one broadcast add of the concatenated
// [1, C, 1, 1] bias. With a single weight (attn_o, an LM-head chunk) there is no concat.
func genConcat(in, out, seq int, recs []placedRecord) string {
	ws, bs := splitRecords(recs)
	m := newMILWriter()
	m.open(mil.IO{Name: "x", Type: ioType(in, seq)})
	m.convConsts()
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.spec.Name
		m.weight("w_"+w.spec.Name, w)
	}
	var bias string
	if len(bs) == 1 {
		bias = m.biasConst(bs[0])
	}
	// The variable holding the convs' result before the bias: y itself when nothing follows.
	result := strings.Join(names, "")
	if bias == "" {
		result = "y"
	}
	if len(ws) == 1 {
		m.conv(result, "w_"+names[0], "x", ws[0].spec.Shape[0], seq)
	} else {
		for _, w := range ws {
			m.conv(w.spec.Name, "w_"+w.spec.Name, "x", w.spec.Shape[0], seq)
		}
		m.constant(mil.TensorType(mil.Int32), "c_axis", "int32(1)")
		m.constant(mil.TensorType(mil.Bool), "c_interleave", "bool(false)")
		m.op(ioType(out, seq), result, "concat", "axis", "c_axis", "interleave", "c_interleave", "values", "("+strings.Join(names, ", ")+")")
	}
	if bias != "" {
		m.op(ioType(out, seq), "y", "add", "x", result, "y", bias)
	}
	return m.close("y")
}

// genFFN is the whole MLP block in one program, gated, y = Wd·(act(Wg·x) · (Wu·x)), or plain,
// y = Wd·act(Wu·x), with the member biases (when the family has them) added right after their
// convs. act is the config's hidden_act: silu(g) = g · sigmoid(g), or the tanh approximation of
// gelu, written with the same ops as 0.5·g·(1 + tanh(z)) = g · sigmoid(2z),
// z = √(2/π)·(g + 0.044715·g³).
func genFFN(hidden, seq int, recs []placedRecord, act string) (string, error) {
	ws, bs := splitRecords(recs)
	gated := len(ws) == 3 && ws[0].spec.Slot == arch.GateProj && ws[1].spec.Slot == arch.UpProj && ws[2].spec.Slot == arch.DownProj
	plain := len(ws) == 2 && ws[0].spec.Slot == arch.UpProj && ws[1].spec.Slot == arch.DownProj
	if !gated && !plain {
		return "", fmt.Errorf("an MLP needs gate, up and down weights, or up and down; have %d records", len(ws))
	}
	if act != arch.ActSiLU && act != arch.ActGeluTanh && act != arch.ActGeluNew {
		return "", fmt.Errorf("activation %q has no MIL program", act)
	}
	inter := ws[0].spec.Shape[0]
	m := newMILWriter()
	m.open(mil.IO{Name: "x", Type: ioType(hidden, seq)})
	m.convConsts()
	for _, w := range ws {
		m.weight("w_"+w.spec.Name, w)
	}
	bias := map[string]string{}
	for _, b := range bs {
		bias[strings.TrimSuffix(b.spec.Name, "_bias")] = m.biasConst(b)
	}
	// linear writes name = conv(w_<rec>, x) (+ b_<rec>): the conv result is name itself when
	// there is no bias to add.
	linear := func(name, rec, x string, out int) {
		b, ok := bias[rec]
		if !ok {
			m.conv(name, "w_"+rec, x, out, seq)
			return
		}
		m.conv(name+"_mm", "w_"+rec, x, out, seq)
		m.op(ioType(out, seq), name, "add", "x", name+"_mm", "y", b)
	}
	// activation writes the activation of v and returns its name.
	activation := func(v string) string {
		t := ioType(inter, seq)
		if act == arch.ActSiLU {
			m.op(t, v+"_sigmoid", "sigmoid", "x", v)
			m.op(t, v+"_silu", "mul", "x", v, "y", v+"_sigmoid")
			return v + "_silu"
		}
		m.constant(mil.TensorType(mil.FP16), "c_gelu_kappa", "fp16(0.044715)")
		m.constant(mil.TensorType(mil.FP16), "c_gelu_2beta", "fp16(1.5957692)") // 2·√(2/π)
		m.op(t, v+"_sq", "mul", "x", v, "y", v)
		m.op(t, v+"_cube", "mul", "x", v+"_sq", "y", v)
		m.op(t, v+"_kcube", "mul", "x", v+"_cube", "y", "c_gelu_kappa")
		m.op(t, v+"_inner", "add", "x", v, "y", v+"_kcube")
		m.op(t, v+"_z", "mul", "x", v+"_inner", "y", "c_gelu_2beta")
		m.op(t, v+"_sigmoid", "sigmoid", "x", v+"_z")
		m.op(t, v+"_gelu", "mul", "x", v, "y", v+"_sigmoid")
		return v + "_gelu"
	}
	if gated {
		linear("gate", "gate", "x", inter)
		g := activation("gate")
		linear("up", "up", "x", inter)
		m.op(ioType(inter, seq), "hidden", "mul", "x", g, "y", "up")
		linear("y", "down", "hidden", hidden)
	} else {
		linear("up", "up", "x", inter)
		h := activation("up")
		linear("y", "down", h, hidden)
	}
	return m.close("y"), nil
}
