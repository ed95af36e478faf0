package cpu

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime"
)

// linear is the weight of one linear layer, [rows, cols] row-major (HF's [out, in]), read in
// place from the mapping: exactly one of f16 and f32 is set.
type linear struct {
	f16        []uint16
	f32        []float32
	rows, cols int
}

// layer holds one decoder layer's weights, by their Hugging Face names.
type layer struct {
	inputLayernorm         []float32 // [hidden]
	qProj, kProj, vProj    linear    // [heads*headDim, hidden], [kvHeads*headDim, hidden] x2
	qBias, kBias, vBias    []float32
	oProj                  linear // [hidden, heads*headDim]
	postAttentionLayernorm []float32
	gateProj, upProj       linear // [intermediate, hidden]
	downProj               linear // [hidden, intermediate]
}

// weights are the whole model's weights.
type weights struct {
	embedTokens []linear // [vocab, hidden] in row chunks (the tied embedding is stored like the LM head)
	layers      []layer
	norm        []float32 // final RMSNorm
	lmHead      []linear  // [vocab, hidden] in row chunks; the embedding's chunks when tied
}

// loadWeights resolves every tensor of a Qwen2 model to views of the mapping.
func loadWeights(m *runtime.Model) (*weights, error) {
	c := m.Config
	w := &weights{layers: make([]layer, c.NumHiddenLayers)}
	var err error
	vec := func(name string, n int) []float32 {
		if err != nil {
			return nil
		}
		var v []float32
		v, err = vector(m, name, n)
		return v
	}
	mat := func(name string) linear {
		if err != nil {
			return linear{}
		}
		var ls []linear
		ls, err = matrix(m, name)
		if err == nil && len(ls) != 1 {
			err = fmt.Errorf("%s: tensor %q is split into %d parts; the CPU backend expects one", m.Name, name, len(ls))
		}
		if err != nil {
			return linear{}
		}
		return ls[0]
	}
	for i := range w.layers {
		l := &w.layers[i]
		name := func(suffix string) string { return arch.LayerTensor(i, suffix) }
		qd, kvd := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
		l.inputLayernorm = vec(name(arch.InputLayernorm), c.HiddenSize)
		l.qProj, l.kProj, l.vProj = mat(name(arch.QProj)), mat(name(arch.KProj)), mat(name(arch.VProj))
		l.qBias, l.kBias, l.vBias = vec(name(arch.QBias), qd), vec(name(arch.KBias), kvd), vec(name(arch.VBias), kvd)
		l.oProj = mat(name(arch.OProj))
		l.postAttentionLayernorm = vec(name(arch.PostAttentionLayernorm), c.HiddenSize)
		l.gateProj, l.upProj, l.downProj = mat(name(arch.GateProj)), mat(name(arch.UpProj)), mat(name(arch.DownProj))
	}
	w.norm = vec(arch.FinalNorm, c.HiddenSize)
	if err != nil {
		return nil, err
	}
	if w.embedTokens, err = matrix(m, arch.EmbedTokens); err != nil {
		return nil, err
	}
	w.lmHead = w.embedTokens
	if !c.TieWordEmbeddings {
		if w.lmHead, err = matrix(m, arch.LMHead); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// vector returns a one-part float32 tensor of n values.
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

// matrix returns a 2-D tensor as one linear per part.
func matrix(m *runtime.Model, name string) ([]linear, error) {
	t, err := m.Tensor(name)
	if err != nil {
		return nil, err
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; expected 2 dimensions", m.Name, name, t.Shape)
	}
	cols := t.Shape[1]
	ls := make([]linear, len(t.Parts))
	for i, p := range t.Parts {
		ls[i] = linear{rows: p.Rows, cols: cols}
		switch t.DType {
		case "f16":
			ls[i].f16 = p.F16()
		case "f32":
			ls[i].f32 = p.F32()
		default:
			return nil, fmt.Errorf("%s: tensor %q has dtype %q; expected \"f16\" or \"f32\"", m.Name, name, t.DType)
		}
	}
	return ls, nil
}
