package cpu

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// weight is the weight of one linear layer (or one row chunk of the LM head), [Rows, Cols]
// row-major (Hugging Face's [out, in]), read in place from the bundle's mapping. It is the one
// place that knows how each storage type is multiplied: a new type is a case in each method
// here plus its kernels. Its methods run on the calling goroutine; the runner splits rows
// over cores.
type weight struct {
	DType      dtype.DType
	Rows, Cols int
	Group      int // q4: inputs per scale and offset
	f16        []uint16
	f32        []float32
	q8         []int8   // q8 codes [Rows, Cols]
	q4         []byte   // q4 codes [Rows, Cols/2], two per byte, the even column in the low nibble
	scale      []uint16 // fp16 scales: [Rows] (q8) or [Rows, Cols/Group] (q4)
	offset     []uint16 // q4 fp16 offsets, like scale
}

// quantized reports whether the weight holds integer codes: its products then read the input
// quantized (preparedInput), which mulActs takes ready-made so that every row range of one
// input shares one quantization.
func (l *weight) quantized() bool { return l.DType.Quantized() }

// mulActs computes rows [r0, r1) of a weight for the tokens of in, which prepare has prepared
// for it (in.reads(l)): y[t*ldy + j] = W[r0+j] · x[t]. It is matVec (one token) or matMul with
// the input prepared once by the caller. It panics on an input not prepared for this weight.
func (l *weight) mulActs(y []float32, ldy int, in *preparedInput, r0, r1 int) {
	c := l.Cols
	switch {
	case l.DType == dtype.F16 && in.hasBF && in.bf.Cols() == c:
		kernels.MatMulF16AMX(y, ldy, &in.bf, l.f16[r0*c:r1*c], r1-r0)
	case l.DType == dtype.Q8 && in.hasBF && in.bf.Cols() == c:
		kernels.MatMulQ8AMX(y, ldy, &in.bf, l.q8[r0*c:r1*c], l.scale[r0:r1], r1-r0)
	case l.DType == dtype.Q8 && in.nf > 0 && len(in.xf) == in.nf*c:
		kernels.MatMulQ8Float(y, ldy, in.xf, in.nf, l.q8[r0*c:r1*c], l.scale[r0:r1], r1-r0, c)
	case l.DType == dtype.Q8 && in.has16 && in.a16.Cols() == c:
		kernels.MatMulQ8Acts(y, ldy, &in.a16, l.q8[r0*c:r1*c], l.scale[r0:r1], r1-r0)
	case l.DType == dtype.Q4 && in.nf > 0 && kernels.Q4FloatActs(in.nf) && len(in.xf) == in.nf*c:
		g := c / l.Group
		kernels.MatMulQ4Float(y, ldy, in.xf, in.nf, l.q4[r0*c/2:r1*c/2], l.scale[r0*g:r1*g], l.offset[r0*g:r1*g], l.Group, r1-r0, c)
	case l.DType == dtype.Q4 && in.has8 && in.a8.Cols() == c:
		g := c / l.Group
		kernels.MatMulQ4Acts(y, ldy, &in.a8, l.q4[r0*c/2:r1*c/2], l.scale[r0*g:r1*g], l.offset[r0*g:r1*g], l.Group, r1-r0)
	default:
		panic(fmt.Sprintf("cpu: weight.mulActs: a %s weight of %d columns and an input prepared as int8 %v (%d columns), int16 %v (%d columns), float32 %d values of %d tokens",
			l.DType, c, in.has8, in.a8.Cols(), in.has16, in.a16.Cols(), len(in.xf), in.nf))
	}
}

// matVec computes the decode product (GEMV) of rows [r0, r1) for one token:
// y[j] = W[r0+j] · x for j < r1-r0.
func (l *weight) matVec(y, x []float32, r0, r1 int) {
	c := l.Cols
	switch l.DType {
	case dtype.F16:
		kernels.MatVecF16(y, l.f16[r0*c:r1*c], x, r1-r0, c)
	case dtype.Q8:
		kernels.MatVecQ8(y, l.q8[r0*c:r1*c], l.scale[r0:r1], x, r1-r0, c)
	case dtype.Q4:
		g := c / l.Group
		kernels.MatVecQ4(y, l.q4[r0*c/2:r1*c/2], l.scale[r0*g:r1*g], l.offset[r0*g:r1*g], l.Group, x, r1-r0, c)
	default:
		kernels.MatVecF32(y, l.f32[r0*c:r1*c], x, r1-r0, c)
	}
}

// matMul computes the prefill product (GEMM) of rows [r0, r1) for n tokens:
// y[t*(r1-r0)+j] = W[r0+j] · x[t] for t < n, j < r1-r0.
func (l *weight) matMul(y, x []float32, n, r0, r1 int) {
	c := l.Cols
	switch l.DType {
	case dtype.F16:
		kernels.MatMulF16(y, x, l.f16[r0*c:r1*c], n, r1-r0, c)
	case dtype.Q8:
		kernels.MatMulQ8(y, x, l.q8[r0*c:r1*c], l.scale[r0:r1], n, r1-r0, c)
	case dtype.Q4:
		g := c / l.Group
		kernels.MatMulQ4(y, x, l.q4[r0*c/2:r1*c/2], l.scale[r0*g:r1*g], l.offset[r0*g:r1*g], l.Group, n, r1-r0, c)
	default:
		kernels.MatMulF32(y, x, l.f32[r0*c:r1*c], n, r1-r0, c)
	}
}

// mul computes rows [r0, r1) of x·Wᵀ for n tokens: matVec for one token, matMul for more.
func (l *weight) mul(y, x []float32, n, r0, r1 int) {
	if n == 1 {
		l.matVec(y, x, r0, r1)
	} else {
		l.matMul(y, x, n, r0, r1)
	}
}

// weightParts returns the 2-D tensor in slot s (of layer) as one weight per part; a stacked
// expert weight [experts, out, in] is one of experts·out rows.
func weightParts(m *runtime.Model, s arch.Slot, layer int) ([]weight, error) {
	t, err := m.TensorOf(s, layer)
	if err != nil {
		return nil, err
	}
	if dims := 2 + btoi(s.Role() == arch.RoleExperts); len(t.Shape) != dims {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; expected %d dimensions", m.Name, t.Name, t.Shape, dims)
	}
	out := make([]weight, len(t.Parts))
	for i, p := range t.Parts {
		l := weight{DType: t.DType, Rows: p.Rows, Cols: t.Cols(), Group: t.Group}
		switch t.DType {
		case dtype.F16:
			l.f16 = p.F16()
		case dtype.F32:
			l.f32 = p.F32()
		case dtype.Q8:
			l.q8, l.scale = p.Int8(), p.Scales()
		case dtype.Q4:
			l.q4, l.scale, l.offset = p.Data, p.Scales(), p.Offsets()
		default:
			return nil, fmt.Errorf("%s: tensor %q has dtype %s; expected f16, f32, q8 or q4", m.Name, t.Name, t.DType)
		}
		out[i] = l
	}
	return out, nil
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rows returns a view of rows [r0, r1) of the weight (one expert's share of a stacked one).
func (l *weight) rows(r0, r1 int) weight {
	c := l.Cols
	v := weight{DType: l.DType, Rows: r1 - r0, Cols: c, Group: l.Group}
	switch l.DType {
	case dtype.F16:
		v.f16 = l.f16[r0*c : r1*c]
	case dtype.Q8:
		v.q8, v.scale = l.q8[r0*c:r1*c], l.scale[r0:r1]
	case dtype.Q4:
		g := c / l.Group
		v.q4, v.scale, v.offset = l.q4[r0*c/2:r1*c/2], l.scale[r0*g:r1*g], l.offset[r0*g:r1*g]
	default:
		v.f32 = l.f32[r0*c : r1*c]
	}
	return v
}

// oneWeight returns the one-part linear weight in slot s of layer.
func oneWeight(m *runtime.Model, s arch.Slot, layer int) (*weight, error) {
	parts, err := weightParts(m, s, layer)
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 {
		return nil, fmt.Errorf("%s: tensor %q is split into %d parts; expected one", m.Name, m.Family.TensorName(s, layer), len(parts))
	}
	return &parts[0], nil
}

// lmHead returns the output projection's row chunks: lm_head, or the embedding when tied.
func lmHead(m *runtime.Model) ([]weight, error) {
	if m.Config.TieWordEmbeddings {
		return weightParts(m, arch.EmbedTokens, -1)
	}
	return weightParts(m, arch.LMHead, -1)
}
