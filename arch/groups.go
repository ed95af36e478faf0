package arch

// Fused groups: the linear layers that read one input and run as one unit (one ANE program
// and one weight blob with a record per member; one parallel job on the CPU).
const (
	GroupQKV       = "attn_qkv"        // q_proj, k_proj, v_proj: one input, the three outputs concatenated
	GroupO         = "attn_o"          // o_proj
	GroupLinearIn  = "linear_attn_in"  // in_proj_qkv, in_proj_z, in_proj_b, in_proj_a of a Gated DeltaNet layer
	GroupLinearOut = "linear_attn_out" // its out_proj
	GroupMLP       = "mlp"             // the whole feed-forward block
	GroupExperts   = "experts"         // the routed experts of a sparse MLP block: every expert's gate_proj | up_proj, and down_proj
	GroupLMHead    = "lm_head"         // the LM head (or tied embedding), in row chunks
)

// Group is one fused group of a layer's linear layers.
type Group struct {
	// Name is one of the layer groups above.
	Name string
	// Linears are the member weights. For a concatenating group (all but the MLP) the group's
	// output is their outputs side by side in this order; for the MLP it is the block's output.
	Linears []Slot
	// Biases holds each member's bias slot, SlotNone where it has none.
	Biases []Slot
	// In and Out are the group's input and output widths.
	In, Out int
}

// Gated reports whether g is a gated MLP (gate, up, down): its output is
// Down · (act(Gate · x) * (Up · x)). A plain MLP (up, down) gives Down · act(Up · x).
func (g Group) Gated() bool { return g.Name == GroupMLP && len(g.Linears) == 3 }

// HasBias reports whether any member has a bias.
func (g Group) HasBias() bool {
	for _, b := range g.Biases {
		if b != SlotNone {
			return true
		}
	}
	return false
}

func groupOf(s Slot) string {
	switch s {
	case QKVProj, QProj, KProj, VProj:
		return GroupQKV
	case OProj:
		return GroupO
	case LinQKVProj, LinZProj, LinBProj, LinAProj:
		return GroupLinearIn
	case LinOutProj:
		return GroupLinearOut
	case GateProj, UpProj, DownProj:
		return GroupMLP
	case ExpertGateUp, ExpertDown:
		return GroupExperts
	}
	return ""
}

// Groups returns the fused groups of the layers of config c, in the order they run: the
// attention groups where some layer attends, the Gated DeltaNet groups where some layer is a
// linear-attention layer, then the MLP where some layer is dense and the experts where some
// layer is sparse. A layer has the groups of its own mixer and of its own MLP (LayerGroups);
// an index into this list names a group in every layer that has it.
//
// The experts group is one weight blob per sparse layer holding every expert (its members
// are the stacked ExpertGateUp and ExpertDown); a token reads only the rows of the experts its
// router chose, so it is never one ANE program.
func (f *Family) Groups(c *Config) []Group {
	bias := func(b Slot) Slot {
		if f.Has(c, b) {
			return b
		}
		return SlotNone
	}
	h := c.HiddenSize
	var out []Group
	if f.anyLayer(c, false) {
		qkv := Group{Name: GroupQKV, Linears: []Slot{QProj, KProj, VProj}, Biases: []Slot{bias(QBias), bias(KBias), bias(VBias)},
			In: h, Out: c.QProjDim() + 2*c.KVDim()}
		if f.fusedQKV() {
			qkv.Linears, qkv.Biases = []Slot{QKVProj}, []Slot{bias(QKVBias)}
		}
		out = append(out, qkv, Group{Name: GroupO, Linears: []Slot{OProj}, Biases: []Slot{bias(OBias)}, In: c.QDim(), Out: h})
	}
	if f.LinearAttention && f.anyLayer(c, true) {
		in := []Slot{LinQKVProj, LinZProj, LinBProj, LinAProj}
		out = append(out,
			Group{Name: GroupLinearIn, Linears: in, Biases: make([]Slot, len(in)),
				In: h, Out: c.LinearConvDim() + c.LinearValueDim() + 2*c.LinearNumValueHeads},
			Group{Name: GroupLinearOut, Linears: []Slot{LinOutProj}, Biases: []Slot{SlotNone}, In: c.LinearValueDim(), Out: h})
	}
	if f.anySparse(c, false) {
		mlp := Group{Name: GroupMLP, Linears: []Slot{GateProj, UpProj, DownProj}, Biases: []Slot{bias(GateBias), bias(UpBias), bias(DownBias)},
			In: h, Out: h}
		if f.MLP == PlainMLP {
			mlp.Linears, mlp.Biases = []Slot{UpProj, DownProj}, []Slot{bias(UpBias), bias(DownBias)}
		}
		out = append(out, mlp)
	}
	if f.anySparse(c, true) {
		out = append(out, Group{Name: GroupExperts, Linears: []Slot{ExpertGateUp, ExpertDown}, Biases: []Slot{SlotNone, SlotNone}, In: h, Out: h})
	}
	return out
}

// anySparse reports whether some layer of c has a sparse MLP block (sparse) or a dense MLP
// (!sparse).
func (f *Family) anySparse(c *Config, sparse bool) bool {
	for l := 0; l < c.NumHiddenLayers; l++ {
		if c.SparseLayer(l) == sparse {
			return true
		}
	}
	return false
}

// anyLayer reports whether some layer of c is a linear-attention layer (linear) or an
// attention layer (!linear).
func (f *Family) anyLayer(c *Config, linear bool) bool {
	for l := 0; l < c.NumHiddenLayers; l++ {
		if c.LinearLayer(l) == linear {
			return true
		}
	}
	return false
}

// LayerHasGroup reports whether layer of config c runs group g: the attention groups on
// attention layers, the Gated DeltaNet groups on linear-attention layers, the MLP on dense
// layers and the experts on sparse ones.
func (f *Family) LayerHasGroup(c *Config, layer int, g Group) bool {
	switch g.Name {
	case GroupQKV, GroupO:
		return !c.LinearLayer(layer)
	case GroupLinearIn, GroupLinearOut:
		return c.LinearLayer(layer)
	case GroupMLP:
		return !c.SparseLayer(layer)
	case GroupExperts:
		return c.SparseLayer(layer)
	}
	return true
}

// LayerGroups returns the groups layer of config c runs, in order.
func (f *Family) LayerGroups(c *Config, layer int) []Group {
	var out []Group
	for _, g := range f.Groups(c) {
		if f.LayerHasGroup(c, layer, g) {
			out = append(out, g)
		}
	}
	return out
}

// Group returns the group called name, or false.
func (f *Family) Group(c *Config, name string) (Group, bool) {
	for _, g := range f.Groups(c) {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}
