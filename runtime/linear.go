package runtime

import (
	"fmt"
	"unsafe"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
	"github.com/anepack/anepack/runtime/kernels"
)

// Linear is the weight of one linear layer, [Rows, Cols] row-major (Hugging Face's [out, in]),
// read in place from the bundle's mapping. It is the one place that knows how each storage type
// is multiplied: a new type is a case in each method here plus its kernels. Its methods run on
// the calling goroutine; callers split rows over cores.
type Linear struct {
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

// Quantized reports whether the weight holds integer codes: its products then read the input
// quantized (QuantInput), which MulActs takes ready-made so that every row range of one input
// shares one quantization.
func (l *Linear) Quantized() bool { return l.DType.Quantized() }

// QuantInput is one input (n tokens of Cols values) prepared once for the weights that read it
// in another form than float32: quantized for quantized weights, in the form each format reads:
// q4 weights int8 activations per block of 32 (kernels.Int8Acts, W4A8), q8 weights 16-bit ones
// (kernels.Int16Acts, W8A16: int8 activations would add an error as large as the int8 weights'
// own, half of an int8 bundle's KL divergence from its fp16 twin; docs/quantization.md); and,
// where AMX says so (on a CPU with AMX-BF16), split into the three bfloat16 parts the AMX
// products of fp16 weights and q8 codes read (kernels.BF16Acts, exact: hi + mid + lo = x).
// Prepare builds only the forms the weights at hand need, each once; the kernels only read
// them, so work items on different rows share one QuantInput. The zero value is ready to use
// (without AMX).
//
// A batch of q8 or q4 products (kernels.Q8FloatActs(n), kernels.Q4FloatActs(n): prefill,
// several decoding streams) reads the float input itself (kernels.MatMulQ8Float,
// kernels.MatMulQ4Float, faster there than W8A16/W4A8 and exact in the activations): Prepare
// then only keeps x, which must stay unchanged until the products are done.
type QuantInput struct {
	// AMX, when set, says for an input of n tokens whether Prepare splits it for the AMX
	// products of fp16 and q8 weights (kernels.UseAMX; nil keeps them on the float and
	// integer kernels). Pool, when set, splits over its threads.
	AMX  func(n int) bool
	Pool *kernels.Pool

	a8          kernels.Int8Acts
	a16         kernels.Int16Acts
	bf          kernels.BF16Acts
	has8, has16 bool
	hasBF       bool
	xf          []float32 // the float input of batched q8/q4 products ([nf, len(xf)/nf]), or nil
	nf          int
}

// Reset forgets the forms held (their buffers stay for the next input).
func (q *QuantInput) Reset() { q.has8, q.has16, q.hasBF, q.xf, q.nf = false, false, false, nil, 0 }

// Prepare quantizes x ([n, w.Cols]) into the form w multiplies, unless q already holds it. An
// f32 weight needs none, nor an fp16 one without AMX, nor a batch of q8 or q4 products
// (kernels.Q8FloatActs, kernels.Q4FloatActs), which reads x. Where AMX says so, fp16 and q8
// weights share one split of x into bfloat16 parts.
func (q *QuantInput) Prepare(w *Linear, x []float32, n int) {
	switch {
	case (w.DType == dtype.F16 || w.DType == dtype.Q8) && q.AMX != nil && q.AMX(n):
		if !q.hasBF {
			q.bf.Split(q.Pool, x, n, w.Cols)
			q.hasBF = true
		}
	case w.DType == dtype.F16: // the float kernels read x
	case w.DType == dtype.Q8 && kernels.Q8FloatActs(n), w.DType == dtype.Q4 && kernels.Q4FloatActs(n):
		q.xf, q.nf = x[:n*w.Cols], n
	case w.DType == dtype.Q8 && !q.has16:
		q.a16.Quantize(x, n, w.Cols)
		q.has16 = true
	case w.DType == dtype.Q4 && !q.has8:
		q.a8.Quantize(x, n, w.Cols)
		q.has8 = true
	}
}

// HasAMX reports whether Prepare has split the input for the AMX product.
func (q *QuantInput) HasAMX() bool { return q.hasBF }

// Reads reports whether w's products read q's prepared input (MulActs) rather than the float
// input (MatVec, MatMul): every quantized weight, and an fp16 weight when Prepare split the
// input for AMX.
func (q *QuantInput) Reads(w *Linear) bool {
	return w.Quantized() || w.DType == dtype.F16 && q.hasBF && q.bf.Cols() == w.Cols
}

// MulActs computes rows [r0, r1) of a weight for the tokens of in, which Prepare has prepared
// for it (in.Reads(l)): y[t*ldy + j] = W[r0+j] · x[t]. It is MatVec (one token) or MatMul with
// the input prepared once by the caller. It panics on an input not prepared for this weight.
func (l *Linear) MulActs(y []float32, ldy int, in *QuantInput, r0, r1 int) {
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
		panic(fmt.Sprintf("runtime.Linear.MulActs: a %s weight of %d columns and an input prepared as int8 %v (%d columns), int16 %v (%d columns), float32 %d values of %d tokens",
			l.DType, c, in.has8, in.a8.Cols(), in.has16, in.a16.Cols(), len(in.xf), in.nf))
	}
}

// MatVec computes the decode product (GEMV) of rows [r0, r1) for one token:
// y[j] = W[r0+j] · x for j < r1-r0.
func (l *Linear) MatVec(y, x []float32, r0, r1 int) {
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

// MatMul computes the prefill product (GEMM) of rows [r0, r1) for n tokens:
// y[t*(r1-r0)+j] = W[r0+j] · x[t] for t < n, j < r1-r0.
func (l *Linear) MatMul(y, x []float32, n, r0, r1 int) {
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

// Mul computes rows [r0, r1) of x·Wᵀ for n tokens: MatVec for one token, MatMul for more.
func (l *Linear) Mul(y, x []float32, n, r0, r1 int) {
	if n == 1 {
		l.MatVec(y, x, r0, r1)
	} else {
		l.MatMul(y, x, n, r0, r1)
	}
}

// Row writes row r as float32 into dst (an embedding lookup).
func (l *Linear) Row(dst []float32, r int) {
	c := l.Cols
	switch l.DType {
	case dtype.F16:
		half.F16ToF32(dst[:c], l.f16[r*c:(r+1)*c])
	case dtype.Q8:
		_ = quant.DequantizeQ8(dst[:c], l.q8[r*c:(r+1)*c], l.scale[r:r+1], 1, c) // lengths match by construction
	case dtype.Q4:
		g := c / l.Group
		_ = quant.DequantizeQ4(dst[:c], l.q4[r*c/2:(r+1)*c/2], l.scale[r*g:(r+1)*g], l.offset[r*g:(r+1)*g], 1, c, l.Group)
	default:
		copy(dst[:c], l.f32[r*c:(r+1)*c])
	}
}

// Matrix is a weight stored in row chunks (the LM head, or the tied embedding, kept in
// ANE-sized parts): the rows of Parts[0], then Parts[1], ...
type Matrix []Linear

// Row writes row r of the whole matrix into dst.
func (m Matrix) Row(dst []float32, r int) {
	for i := range m {
		if r < m[i].Rows {
			m[i].Row(dst, r)
			return
		}
		r -= m[i].Rows
	}
}

// Matrix returns the 2-D tensor in slot s (of layer) as one Linear per part.
func (m *Model) Matrix(s arch.Slot, layer int) (Matrix, error) {
	t, err := m.TensorOf(s, layer)
	if err != nil {
		return nil, err
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; expected 2 dimensions", m.Name, t.Name, t.Shape)
	}
	out := make(Matrix, len(t.Parts))
	for i, p := range t.Parts {
		l := Linear{DType: t.DType, Rows: p.Rows, Cols: t.Shape[1], Group: t.Group}
		switch t.DType {
		case dtype.F16:
			l.f16 = p.F16()
		case dtype.F32:
			l.f32 = p.F32()
		case dtype.Q8:
			l.q8 = unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(p.Data))), len(p.Data))
			l.scale = u16s(p.Scale)
		case dtype.Q4:
			l.q4, l.scale, l.offset = p.Data, u16s(p.Scale), u16s(p.Offset)
		default:
			return nil, fmt.Errorf("%s: tensor %q has dtype %s; expected f16, f32, q8 or q4", m.Name, t.Name, t.DType)
		}
		out[i] = l
	}
	return out, nil
}

// Linear returns the one-part linear weight in slot s of layer.
func (m *Model) Linear(s arch.Slot, layer int) (*Linear, error) {
	parts, err := m.Matrix(s, layer)
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 {
		return nil, fmt.Errorf("%s: tensor %q is split into %d parts; expected one", m.Name, m.Family.TensorName(s, layer), len(parts))
	}
	return &parts[0], nil
}

// Vector returns the one-part float32 tensor in slot s of layer (a norm weight, a bias or
// another small parameter, all its elements in a row), or nil when the layer has no tensor in
// that slot.
func (m *Model) Vector(s arch.Slot, layer int) ([]float32, error) {
	if s == arch.SlotNone || !m.HasIn(s, layer) {
		return nil, nil
	}
	t, err := m.TensorOf(s, layer)
	if err != nil {
		return nil, err
	}
	n := arch.Elements(t.Shape)
	if t.DType != dtype.F32 || len(t.Parts) != 1 || len(t.Parts[0].F32()) != n {
		return nil, fmt.Errorf("%s: tensor %q: expected %d float32 values in one part, got dtype %s in %d part(s)", m.Name, t.Name, n, t.DType, len(t.Parts))
	}
	return t.Parts[0].F32(), nil
}

// LMHead returns the output projection: lm_head, or the embedding when tied.
func (m *Model) LMHead() (Matrix, error) {
	if m.Config.TieWordEmbeddings {
		return m.Matrix(arch.EmbedTokens, -1)
	}
	return m.Matrix(arch.LMHead, -1)
}

// u16s views fp16 bytes of the mapping as uint16s (aligned: checked when the model was opened).
func u16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}
