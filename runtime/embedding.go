package runtime

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// embedding is a table the forward pass reads rows of (the token embedding, GPT-2's learned
// position embedding), in the storage type the bundle holds it in and in the tensor's row
// chunks (a tied embedding is kept in the LM head's ANE-sized parts). Every backend shares the
// lookup, so a quantized table is read here, through quant's definition of its values; the
// products of the linear layers are the backends' own.
type embedding struct {
	dt    dtype.DType
	cols  int
	group int // q4: inputs per scale and offset
	parts []TensorPart
}

// embedding returns the 2-D tensor in the model-level slot s as a table of rows.
func (m *Model) embedding(s arch.Slot) (*embedding, error) {
	t, err := m.TensorOf(s, -1)
	if err != nil {
		return nil, err
	}
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%s: tensor %q has shape %v; expected 2 dimensions", m.Name, t.Name, t.Shape)
	}
	switch t.DType {
	case dtype.F16, dtype.F32, dtype.Q8, dtype.Q4:
	default:
		return nil, fmt.Errorf("%s: tensor %q has dtype %s; expected f16, f32, q8 or q4", m.Name, t.Name, t.DType)
	}
	return &embedding{dt: t.DType, cols: t.Shape[1], group: t.Group, parts: t.Parts}, nil
}

// row writes row r as float32 into dst[:cols].
func (e *embedding) row(dst []float32, r int) {
	for _, p := range e.parts {
		if r < p.Rows {
			e.partRow(dst[:e.cols], p, r)
			return
		}
		r -= p.Rows
	}
}

// partRow writes row r of part p into dst.
func (e *embedding) partRow(dst []float32, p TensorPart, r int) {
	c := e.cols
	switch e.dt {
	case dtype.F16:
		half.F16ToF32(dst, p.F16()[r*c:(r+1)*c])
	case dtype.Q8:
		_ = quant.DequantizeQ8(dst, p.Int8()[r*c:(r+1)*c], p.Scales()[r:r+1], 1, c) // lengths match by construction
	case dtype.Q4:
		g := c / e.group
		_ = quant.DequantizeQ4(dst, p.Data[r*c/2:(r+1)*c/2], p.Scales()[r*g:(r+1)*g], p.Offsets()[r*g:(r+1)*g], 1, c, e.group)
	default:
		copy(dst, p.F32()[r*c:(r+1)*c])
	}
}
