package cpu

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// Projections are the linear layers of a model on the CPU: every fused group of every layer and
// the LM head, as float32 products over the bundle's weights read in place, split over a pool's
// cores. The CPU backend uses them for everything; the ANE backend for decoding on the CPU.
// They implement runtime.Projections.
type Projections struct {
	pool    *kernels.Pool
	groups  [][]group // [layer][index in the family's Groups]
	head    []weight
	vocab   int
	inter   int // widest MLP (or expert) intermediate, for the projector's scratch
	hidden  int
	experts bool                          // some layer is sparse: projectors need the experts' scratch
	gated   func(dst, gate, up []float32) // a gated MLP's act(gate)*up
	act     func(dst, x []float32)        // a plain MLP's activation, in place
	amxFor  func(n int) bool              // whether a product of n tokens of fp16 or q8 weights runs on AMX; nil: never
}

// group is one fused group of one layer; w is nil where the layer does not run the group (the
// attention groups of a Gated DeltaNet layer, and the reverse). The experts group of a sparse
// layer has x instead.
type group struct {
	arch.Group
	w []*weight   // the members
	b [][]float32 // each member's bias, nil where it has none
	x *experts
}

// hasAMXWeights reports whether any projection is stored in a format the AMX products take
// (fp16, q8).
func (p *Projections) hasAMXWeights() bool {
	for _, layer := range p.groups {
		for _, g := range layer {
			if g.x != nil && (g.x.gate[0].DType == dtype.F16 || g.x.gate[0].DType == dtype.Q8) {
				return true
			}
			for _, w := range g.w {
				if w.DType == dtype.F16 || w.DType == dtype.Q8 {
					return true
				}
			}
		}
	}
	return false
}

// NewProjections resolves m's linear weights and biases for the CPU.
func NewProjections(m *runtime.Model, pool *kernels.Pool) (*Projections, error) {
	c, fam := m.Config, m.Family
	p := &Projections{pool: pool, groups: make([][]group, c.NumHiddenLayers), vocab: c.VocabSize, hidden: c.HiddenSize, amxFor: kernels.UseAMX}
	switch c.HiddenAct {
	case arch.ActSiLU:
		p.gated = kernels.SwiGLU
	case arch.ActGeluTanh, arch.ActGeluNew:
		p.gated, p.act = kernels.GeGLU, kernels.GeluTanh
	default:
		return nil, fmt.Errorf("%s: activation %q has no CPU kernel", m.Name, c.HiddenAct)
	}
	if fam.MLP == arch.PlainMLP && p.act == nil {
		return nil, fmt.Errorf("%s: a plain MLP with activation %q has no CPU kernel", m.Name, c.HiddenAct)
	}
	for l := range p.groups {
		for _, g := range fam.Groups(c) {
			G := group{Group: g}
			if !fam.LayerHasGroup(c, l, g) {
				p.groups[l] = append(p.groups[l], G)
				continue
			}
			if g.Name == arch.GroupExperts {
				var err error
				if G.x, err = newExperts(m, l); err != nil {
					return nil, err
				}
				p.inter = max(p.inter, c.MoEIntermediateSize)
				p.experts = true
				p.groups[l] = append(p.groups[l], G)
				continue
			}
			for i, s := range g.Linears {
				w, err := oneWeight(m, s, l)
				if err != nil {
					return nil, err
				}
				b, err := m.Vector(g.Biases[i], l)
				if err != nil {
					return nil, err
				}
				G.w, G.b = append(G.w, w), append(G.b, b)
			}
			if g.Name == arch.GroupMLP {
				p.inter = max(p.inter, G.w[0].Rows)
			}
			p.groups[l] = append(p.groups[l], G)
		}
	}
	var err error
	if p.head, err = lmHead(m); err != nil {
		return nil, err
	}
	if len(p.head) > maxOutputs {
		return nil, fmt.Errorf("%s: the LM head has %d row chunks; the CPU backend handles at most %d", m.Name, len(p.head), maxOutputs)
	}
	return p, nil
}

// NewProjector returns the projections of one sequence, with scratch for batch tokens.
func (p *Projections) NewProjector(batch int) (runtime.Projector, error) {
	pr := &projector{p: p, run: newRunner(p.pool, batch, p.amxFor), mlp: make([]float32, batch*p.inter)}
	if p.experts {
		pr.xe, pr.ye = make([]float32, batch*p.hidden), make([]float32, batch*p.hidden)
	}
	return pr, nil
}

// projector runs Projections for one sequence: its runner holds the per-thread scratch.
type projector struct {
	p      *Projections
	run    *runner
	mlp    []float32 // [batch, intermediate] act(gate)*up
	xe, ye []float32 // [batch, hidden] one expert's tokens, gathered, and its outputs
}

// Group implements runtime.Projector: a concatenating group is one job over its members'
// rows; a gated MLP is one job for gate and up with the activation fused, then one for
// down; a plain MLP one for up, the activation, and one for down.
func (pr *projector) Group(layer, g int, x []float32, n int, y []float32) error {
	G := &pr.p.groups[layer][g]
	if G.w == nil {
		return fmt.Errorf("layer %d does not run group %s", layer, G.Name)
	}
	if G.Name == arch.GroupMLP {
		w, b := G.w, G.b
		inter := w[0].Rows
		mlp := pr.mlp[:n*inter]
		if G.Gated() {
			pr.run.gatedMLP(mlp, x, n, w[0], w[1], b[0], b[1], pr.p.gated)
			w, b = w[2:], b[2:]
		} else {
			pr.run.add(w[0], b[0], mlp, inter, 0)
			pr.run.linear(x, n)
			pr.run.activate(pr.p.act, mlp)
			w, b = w[1:], b[1:]
		}
		pr.run.add(w[0], b[0], y, G.Out, 0)
		pr.run.linear(mlp, n)
		return nil
	}
	col := 0
	for i, w := range G.w {
		pr.run.add(w, G.b[i], y, G.Out, col)
		col += w.Rows
	}
	pr.run.linear(x, n)
	return nil
}

// LMHead implements runtime.Projector: every row chunk in one job.
func (pr *projector) LMHead(x []float32, n int, logits []float32) error {
	col := 0
	for i := range pr.p.head {
		pr.run.add(&pr.p.head[i], nil, logits, pr.p.vocab, col)
		col += pr.p.head[i].Rows
	}
	pr.run.linear(x, n)
	return nil
}
