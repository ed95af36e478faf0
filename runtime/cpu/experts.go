package cpu

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// experts are one sparse layer's experts: views of each expert's rows of the stacked weights
// (arch.ExpertGateUp: its gate_proj rows, then its up_proj rows; arch.ExpertDown), read in
// place. A token's products read its experts' rows only.
type experts struct {
	gate, up, down []weight // [experts]
}

// newExperts resolves the experts of a sparse layer.
func newExperts(m *runtime.Model, layer int) (*experts, error) {
	c := m.Config
	gu, err := oneWeight(m, arch.ExpertGateUp, layer)
	if err != nil {
		return nil, err
	}
	down, err := oneWeight(m, arch.ExpertDown, layer)
	if err != nil {
		return nil, err
	}
	e, inter, h := c.NumExperts, c.MoEIntermediateSize, c.HiddenSize
	if gu.Rows != e*2*inter || gu.Cols != h || down.Rows != e*h || down.Cols != inter {
		return nil, fmt.Errorf("%s: layer %d's experts are [%d, %d] and [%d, %d]; expected [%d, %d] and [%d, %d]",
			m.Name, layer, gu.Rows, gu.Cols, down.Rows, down.Cols, e*2*inter, h, e*h, inter)
	}
	x := &experts{gate: make([]weight, e), up: make([]weight, e), down: make([]weight, e)}
	for i := 0; i < e; i++ {
		x.gate[i] = gu.rows(2*i*inter, (2*i+1)*inter)
		x.up[i] = gu.rows((2*i+1)*inter, (2*i+2)*inter)
		x.down[i] = down.rows(i*h, (i+1)*h)
	}
	return x, nil
}

// Experts implements runtime.Projector: each expert that some token chose runs once, on the
// rows of the tokens that chose it gathered into a batch (a prefill reads each expert's weights
// once per pass, a decode step only its token's experts): the gated MLP's gate and up in one
// job, down in another; each output row, times its weight, is added to its token's row of
// y, expert after expert.
func (pr *projector) Experts(layer, g int, x []float32, n int, r *runtime.Routes, y []float32) error {
	G := &pr.p.groups[layer][g]
	if G.x == nil {
		return fmt.Errorf("layer %d does not run group %s", layer, G.Name)
	}
	h := G.In
	clear(y[:n*G.Out])
	for e := range G.x.gate {
		order := r.Order[r.Start[e]:r.Start[e+1]]
		m := len(order)
		if m == 0 {
			continue
		}
		in := x[:h] // one token: its own row
		if n > 1 {
			in = pr.xe[:m*h]
			for i, c := range order {
				t := int(c) / r.K
				copy(in[i*h:(i+1)*h], x[t*h:(t+1)*h])
			}
		}
		gate := &G.x.gate[e]
		mid := pr.mlp[:m*gate.Rows]
		pr.run.gatedMLP(mid, in, m, gate, &G.x.up[e], nil, nil, pr.p.gated)
		out := pr.ye[:m*h]
		pr.run.add(&G.x.down[e], nil, out, h, 0)
		pr.run.linear(mid, m)
		for i, c := range order {
			t := int(c) / r.K
			kernels.Axpy(y[t*h:(t+1)*h], r.Weight[c], out[i*h:(i+1)*h])
		}
	}
	return nil
}
