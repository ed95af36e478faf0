package ane

import (
	"fmt"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// projector computes the matrix products of the forward pass for n tokens, token-major:
//
//	qkv:    x [n, H]  -> y [n, Cq+2Ckv] = q | k | v with the biases added
//	o:      x [n, Cq] -> y [n, H]
//	mlp:    x [n, H]  -> y [n, H] = down(silu(gate(x)) * up(x))
//	lmHead: x [n, H]  -> logits [n, vocab], n <= lmPiece
//
// kernelProjector runs the bundle's ANE kernels (on the ANE or in the sim); cpuProjector runs
// float32 GEMVs over the same weight bytes, for decoding on the CPU. Everything else in a
// layer (embedding, norms, RoPE, attention, residuals) is the State's, shared by both.
type projector interface {
	qkv(layer int, x []float32, n int, y []float32) error
	o(layer int, x []float32, n int, y []float32) error
	mlp(layer int, x []float32, n int, y, tmp []float32) error
	lmHead(x []float32, n int, logits, tmp []float32) error
	// scratch is how many float32 values of tmp mlp and lmHead need.
	scratch() int
}

// lmPiece is the most positions one lmHead call takes: the LM-head kernels are generated for
// S = 32 only (mil.Options.LMHeadSeqs), and generation needs the last position's logits.
const lmPiece = mil.DecodeSeq

// kernelProjector dispatches to the bundle's kernels through mil.Dispatcher, which picks the
// bucket, packs to channel-major fp16 and back, and loads each kernel on first use.
type kernelProjector struct {
	d       *mil.Dispatcher
	lmRows  []int
	lmLayer int
	vocab   int
}

func (p *kernelProjector) qkv(l int, x []float32, n int, y []float32) error {
	return p.d.Run(arch.GroupQKV, l, 0, x, n, y)
}

func (p *kernelProjector) o(l int, x []float32, n int, y []float32) error {
	return p.d.Run(arch.GroupO, l, 0, x, n, y)
}

func (p *kernelProjector) mlp(l int, x []float32, n int, y, _ []float32) error {
	return p.d.Run(arch.GroupMLP, l, 0, x, n, y)
}

// scratch holds one chunk's logits for lmPiece positions.
func (p *kernelProjector) scratch() int { return lmPiece * slices.Max(p.lmRows) }

// lmHead runs every chunk into tmp ([n, rows of the chunk]) and copies its columns into place.
func (p *kernelProjector) lmHead(x []float32, n int, logits, tmp []float32) error {
	col := 0
	for k, rows := range p.lmRows {
		y := tmp[:n*rows]
		if err := p.d.Run(mil.GroupLMHead, p.lmLayer, k, x, n, y); err != nil {
			return err
		}
		for t := 0; t < n; t++ {
			copy(logits[t*p.vocab+col:t*p.vocab+col+rows], y[t*rows:(t+1)*rows])
		}
		col += rows
	}
	return nil
}

// matrix is one weight matrix (or LM-head chunk) read in place from the bundle.
type matrix struct {
	f16        []uint16
	f32        []float32
	rows, cols int
}

// mulVec computes y = W·x for one token on the pool.
func (w *matrix) mulVec(pool *kernels.Pool, y, x []float32) {
	if w.f16 != nil {
		pool.MatVecF16(y, w.f16, x, w.rows, w.cols)
	} else {
		pool.MatVecF32(y, w.f32, x, w.rows, w.cols)
	}
}

// matrices returns a 2-D tensor of m as one matrix per part.
func matrices(m *runtime.Model, name string) ([]matrix, error) {
	t, err := m.Tensor(name)
	if err != nil {
		return nil, err
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; expected 2 dimensions", m.Name, name, t.Shape)
	}
	out := make([]matrix, len(t.Parts))
	for i, p := range t.Parts {
		out[i] = matrix{rows: p.Rows, cols: t.Shape[1]}
		switch t.DType {
		case "f16":
			out[i].f16 = p.F16()
		case "f32":
			out[i].f32 = p.F32()
		default:
			return nil, fmt.Errorf("%s: tensor %q has dtype %q; expected \"f16\" or \"f32\"", m.Name, name, t.DType)
		}
	}
	return out, nil
}

// vector returns a one-part float32 tensor of n values (a norm weight or a bias).
func vector(m *runtime.Model, name string, n int) ([]float32, error) {
	t, err := m.Tensor(name)
	if err != nil {
		return nil, err
	}
	if t.DType != "f32" || len(t.Parts) != 1 || len(t.Parts[0].F32()) != n {
		return nil, fmt.Errorf("%s: tensor %q: expected %d float32 values in one part, got dtype %q in %d part(s)", m.Name, name, n, t.DType, len(t.Parts))
	}
	return t.Parts[0].F32(), nil
}

// cpuLayer is one decoder layer's weights for the CPU projector.
type cpuLayer struct {
	q, k, v, o, gate, up, down matrix
	qb, kb, vb                 []float32
}

// cpuProjector computes the projections in float32 on the CPU, one GEMV per token and matrix
// (it serves decode, where n is 1). It reads the very weight bytes the kernels' blobs hold.
type cpuProjector struct {
	pool          *kernels.Pool
	layers        []cpuLayer
	lm            []matrix
	vocab         int
	q, kv, hidden int
	inter         int
}

func newCPUProjector(m *runtime.Model, pool *kernels.Pool) (*cpuProjector, error) {
	c := m.Config
	p := &cpuProjector{pool: pool, layers: make([]cpuLayer, c.NumHiddenLayers), vocab: c.VocabSize,
		q: c.NumAttentionHeads * c.HeadDim, kv: c.NumKeyValueHeads * c.HeadDim, hidden: c.HiddenSize,
		inter: c.IntermediateSize}
	one := func(name string) (matrix, error) {
		ms, err := matrices(m, name)
		if err != nil {
			return matrix{}, err
		}
		if len(ms) != 1 {
			return matrix{}, fmt.Errorf("%s: tensor %q is split into %d parts; expected one", m.Name, name, len(ms))
		}
		return ms[0], nil
	}
	var err error
	for i := range p.layers {
		L := &p.layers[i]
		for _, w := range []struct {
			dst  *matrix
			name string
		}{{&L.q, arch.QProj}, {&L.k, arch.KProj}, {&L.v, arch.VProj}, {&L.o, arch.OProj},
			{&L.gate, arch.GateProj}, {&L.up, arch.UpProj}, {&L.down, arch.DownProj}} {
			if *w.dst, err = one(arch.LayerTensor(i, w.name)); err != nil {
				return nil, err
			}
		}
		if L.qb, err = vector(m, arch.LayerTensor(i, arch.QBias), p.q); err != nil {
			return nil, err
		}
		if L.kb, err = vector(m, arch.LayerTensor(i, arch.KBias), p.kv); err != nil {
			return nil, err
		}
		if L.vb, err = vector(m, arch.LayerTensor(i, arch.VBias), p.kv); err != nil {
			return nil, err
		}
	}
	head := arch.EmbedTokens
	if !c.TieWordEmbeddings {
		head = arch.LMHead
	}
	if p.lm, err = matrices(m, head); err != nil {
		return nil, err
	}
	return p, nil
}

// scratch holds gate and up of one token.
func (p *cpuProjector) scratch() int { return 2 * p.inter }

func (p *cpuProjector) qkv(l int, x []float32, n int, y []float32) error {
	L := &p.layers[l]
	h, t := p.hidden, p.q+2*p.kv
	for i := 0; i < n; i++ {
		xi, row := x[i*h:(i+1)*h], y[i*t:(i+1)*t]
		q, k, v := row[:p.q], row[p.q:p.q+p.kv], row[p.q+p.kv:]
		L.q.mulVec(p.pool, q, xi)
		L.k.mulVec(p.pool, k, xi)
		L.v.mulVec(p.pool, v, xi)
		kernels.Add(q, L.qb)
		kernels.Add(k, L.kb)
		kernels.Add(v, L.vb)
	}
	return nil
}

func (p *cpuProjector) o(l int, x []float32, n int, y []float32) error {
	L := &p.layers[l]
	for i := 0; i < n; i++ {
		L.o.mulVec(p.pool, y[i*p.hidden:(i+1)*p.hidden], x[i*p.q:(i+1)*p.q])
	}
	return nil
}

func (p *cpuProjector) mlp(l int, x []float32, n int, y, tmp []float32) error {
	L := &p.layers[l]
	g, u := tmp[:p.inter], tmp[p.inter:2*p.inter]
	for i := 0; i < n; i++ {
		xi := x[i*p.hidden : (i+1)*p.hidden]
		L.gate.mulVec(p.pool, g, xi)
		L.up.mulVec(p.pool, u, xi)
		kernels.SwiGLU(g, g, u)
		L.down.mulVec(p.pool, y[i*p.hidden:(i+1)*p.hidden], g)
	}
	return nil
}

func (p *cpuProjector) lmHead(x []float32, n int, logits, _ []float32) error {
	for i := 0; i < n; i++ {
		col := 0
		for k := range p.lm {
			w := &p.lm[k]
			w.mulVec(p.pool, logits[i*p.vocab+col:i*p.vocab+col+w.rows], x[i*p.hidden:(i+1)*p.hidden])
			col += w.rows
		}
	}
	return nil
}
