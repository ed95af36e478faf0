package convert

import (
	"fmt"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
)

// MLX4 is a weight an MLX 4-bit checkpoint (mlx-community/*-4bit) stores quantized: the packed
// codes (uint32 [rows, cols/8], element 0 in bits 0-3 of the word) and per-group scales and
// biases (w = scale·q + bias) in the model's float type.
type MLX4 struct {
	Weight, Scales, Biases *TensorRef
}

// UseMLX4 tells Check that linear weights and embeddings may come MLX-quantized with groups of
// group inputs; Check then accepts `X.weight` (uint32) with `X.scales` and `X.biases` in place
// of a float `X.weight`, and MLX4 finds them.
func (c *Checkpoint) UseMLX4(group int) { c.mlxGroup = group }

// MLX4 returns the MLX parts of the weight called name (the architecture's name), or nil when
// the checkpoint stores it unquantized. Check must have run.
func (c *Checkpoint) MLX4(name string) *MLX4 {
	if c.mlxGroup == 0 {
		return nil
	}
	w := c.Tensor(name)
	base := strings.TrimSuffix(name, ".weight")
	s, b := c.Tensor(base+".scales"), c.Tensor(base+".biases")
	if w == nil || s == nil || b == nil || w.DType != dtype.U32 {
		return nil
	}
	return &MLX4{Weight: w, Scales: s, Biases: b}
}

// checkMLX4 checks the MLX parts of weight t, which holds rows x cols values: uint32 codes
// [rows, cols/8], float scales and biases [rows, cols/group] of one type. It returns the
// checkpoint names of the side tensors, or ok false when t is not stored MLX-quantized.
func (c *Checkpoint) checkMLX4(t arch.Tensor) (side []string, ok bool, err error) {
	q := c.MLX4(t.Name)
	if q == nil {
		return nil, false, nil
	}
	rows, cols := t.Shape[0], t.Shape[1]
	g := c.mlxGroup
	if t.Transposed || cols%g != 0 || cols%8 != 0 {
		return nil, false, &FileError{File: q.Weight.File, Tensor: q.Weight.Name, Msg: fmt.Sprintf("MLX 4-bit weight of %d inputs with groups of %d: expected a multiple of the group size", cols, g)}
	}
	if want := []int{rows, cols / 8}; !equalInts(q.Weight.Shape, want) {
		return nil, false, &FileError{File: q.Weight.File, Tensor: q.Weight.Name, Msg: fmt.Sprintf("MLX 4-bit codes of shape %v; config.json implies %v (uint32, 8 per word)", q.Weight.Shape, want)}
	}
	for _, r := range []*TensorRef{q.Scales, q.Biases} {
		if want := []int{rows, cols / g}; !equalInts(r.Shape, want) {
			return nil, false, &FileError{File: r.File, Tensor: r.Name, Msg: fmt.Sprintf("shape %v; expected %v (a value per %d inputs)", r.Shape, want, g)}
		}
		if !r.DType.IsFloat() || r.DType != q.Scales.DType {
			return nil, false, &FileError{File: r.File, Tensor: r.Name, Msg: fmt.Sprintf("dtype %s; expected the scales' float type", r.RawDType)}
		}
	}
	return []string{q.Scales.Name, q.Biases.Name}, true, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Rows returns the rows [r0, r1) of a 2-D tensor as a tensor of its own (same file, a sub-slice
// of its bytes).
func (r *TensorRef) Rows(r0, r1 int) *TensorRef {
	part := *r
	rowBytes := len(r.Data) / r.Shape[0]
	part.Data = r.Data[r0*rowBytes : r1*rowBytes]
	part.Shape = append([]int{r1 - r0}, r.Shape[1:]...)
	return &part
}
