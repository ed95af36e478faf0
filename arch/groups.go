package arch

// Fused kernel groups: the linear layers that read one input and run as one kernel (one ANE
// program and one weight blob with a record per member; one parallel dispatch on the CPU).
const (
	GroupQKV    = "attn_qkv" // q_proj, k_proj, v_proj: one input, the three outputs concatenated
	GroupO      = "attn_o"   // o_proj
	GroupMLP    = "mlp"      // the whole feed-forward block
	GroupLMHead = "lm_head"  // the LM head (or tied embedding), in row chunks
)

// Group is one fused kernel of a layer.
type Group struct {
	// Name is GroupQKV, GroupO or GroupMLP.
	Name string
	// Linears are the member weights. For a concatenating group (QKV, O) the kernel's output is
	// their outputs side by side in this order; for the MLP it is the block's output.
	Linears []Slot
	// Biases holds each member's bias slot, SlotNone where it has none.
	Biases []Slot
	// In and Out are the kernel's input and output widths.
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
	case GateProj, UpProj, DownProj:
		return GroupMLP
	}
	return ""
}

// Groups returns the fused kernels of every layer of config c, in the order they run.
func (f *Family) Groups(c *Config) []Group {
	bias := func(b Slot) Slot {
		if f.Has(c, b) {
			return b
		}
		return SlotNone
	}
	h := c.HiddenSize
	qkv := Group{Name: GroupQKV, Linears: []Slot{QProj, KProj, VProj}, Biases: []Slot{bias(QBias), bias(KBias), bias(VBias)},
		In: h, Out: c.QDim() + 2*c.KVDim()}
	if f.fusedQKV() {
		qkv.Linears, qkv.Biases = []Slot{QKVProj}, []Slot{bias(QKVBias)}
	}
	mlp := Group{Name: GroupMLP, Linears: []Slot{GateProj, UpProj, DownProj}, Biases: []Slot{bias(GateBias), bias(UpBias), bias(DownBias)},
		In: h, Out: h}
	if f.MLP == PlainMLP {
		mlp.Linears, mlp.Biases = []Slot{UpProj, DownProj}, []Slot{bias(UpBias), bias(DownBias)}
	}
	return []Group{qkv, {Name: GroupO, Linears: []Slot{OProj}, Biases: []Slot{bias(OBias)}, In: c.QDim(), Out: h}, mlp}
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
