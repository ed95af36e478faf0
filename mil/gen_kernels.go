package mil

// The program bodies. Each takes its weights as placed records and writes one input x and one
// output y, fp16 [1, C, 1, S], so that no multi-I/O binding order question arises.

func ioType(c, seq int) Type { return TensorType(FP16, 1, c, 1, seq) }

// genLinear is y = W·x: one 1x1 conv (the O projection, an LM-head chunk).
func genLinear(in, out, seq int, w placedRecord) string {
	m := newMILWriter()
	m.open(IO{Name: "x", Type: ioType(in, seq)})
	m.convConsts()
	m.weight("w_"+w.spec.Name, w)
	m.conv("y", "w_"+w.spec.Name, "x", out, seq)
	return m.close("y")
}

// genQKV is y = concat(Wq·x, Wk·x, Wv·x) + b: three convs of one input, concatenated along
// channels into a single output (several outputs of unequal sizes are what broke the Qwen
// "ANE Inference" fused path, ane-facts §3.5), then one broadcast add of the [1, C, 1, 1] bias.
func genQKV(hidden, q, kv, seq int, wq, wk, wv placedRecord, bias *placedRecord) string {
	m := newMILWriter()
	m.open(IO{Name: "x", Type: ioType(hidden, seq)})
	m.convConsts()
	m.weight("w_q", wq)
	m.weight("w_k", wk)
	m.weight("w_v", wv)
	total := q + 2*kv
	if bias != nil {
		t := TensorType(FP16, bias.spec.Shape...)
		m.constant(t, "b_qkv", blobLiteral(t, bias.path, bias.offset))
	}
	m.conv("q", "w_q", "x", q, seq)
	m.conv("k", "w_k", "x", kv, seq)
	m.conv("v", "w_v", "x", kv, seq)
	m.constant(TensorType(Int32), "c_axis", "int32(1)")
	m.constant(TensorType(Bool), "c_interleave", "bool(false)")
	cat := "y"
	if bias != nil {
		cat = "qkv"
	}
	m.op(ioType(total, seq), cat, "concat", "axis", "c_axis", "interleave", "c_interleave", "values", "(q, k, v)")
	if bias != nil {
		m.op(ioType(total, seq), "y", "add", "x", "qkv", "y", "b_qkv")
	}
	return m.close("y")
}

// genFFN is the whole SwiGLU MLP in one program: y = Wd·(silu(Wg·x) · (Wu·x)), with
// silu(g) = g · sigmoid(g).
func genFFN(hidden, inter, seq int, wg, wu, wd placedRecord) string {
	m := newMILWriter()
	m.open(IO{Name: "x", Type: ioType(hidden, seq)})
	m.convConsts()
	m.weight("w_gate", wg)
	m.weight("w_up", wu)
	m.weight("w_down", wd)
	m.conv("gate", "w_gate", "x", inter, seq)
	m.op(ioType(inter, seq), "gate_sigmoid", "sigmoid", "x", "gate")
	m.op(ioType(inter, seq), "gate_silu", "mul", "x", "gate", "y", "gate_sigmoid")
	m.conv("up", "w_up", "x", inter, seq)
	m.op(ioType(inter, seq), "hidden", "mul", "x", "gate_silu", "y", "up")
	m.conv("y", "w_down", "hidden", hidden, seq)
	return m.close("y")
}
