package blobplan

import (
	"fmt"

	"github.com/anepack/anepack/dtype"
)

// DefaultGroupSize is the default number of inputs per scale and offset of q4 weights.
const DefaultGroupSize = 32

// Options chooses how a model's linear weights are stored.
type Options struct {
	// WeightDType is the storage type of linear weights: dtype.F16 (default), dtype.F32,
	// dtype.Q8 or dtype.Q4. Every type is laid out the same way; only f16 and the quantized
	// types are also read by ANE programs (an f32 bundle is a CPU bundle).
	WeightDType dtype.DType
	// GroupSize is the number of inputs per scale and offset of Q4 weights (32, 64 or 128);
	// 0 means DefaultGroupSize.
	GroupSize int
	// LMHeadDType overrides the LM head's storage (and, when tied, the embedding's); Invalid
	// means the rule of lmHeadSource (q8 in quantized bundles). An MLX 4-bit checkpoint keeps
	// its 4-bit head: dtype.Q4.
	LMHeadDType dtype.DType
	// MaxLMHeadRows bounds the rows of one LM-head chunk; 0 means DefaultLMHeadRows.
	MaxLMHeadRows int
}

// Normalize returns the options with their defaults filled in, or an error naming the field
// that is out of range.
func (o Options) Normalize() (Options, error) {
	if o.WeightDType == dtype.Invalid {
		o.WeightDType = dtype.F16
	}
	if o.WeightDType != dtype.F16 && o.WeightDType != dtype.F32 && !o.WeightDType.Quantized() {
		return o, fmt.Errorf("blobplan: weight dtype %s; expected f16, f32, q8 or q4", o.WeightDType)
	}
	if o.GroupSize == 0 {
		o.GroupSize = DefaultGroupSize
	}
	if o.GroupSize != 32 && o.GroupSize != 64 && o.GroupSize != 128 {
		return o, fmt.Errorf("blobplan: group size %d; expected 32, 64 or 128", o.GroupSize)
	}
	if o.MaxLMHeadRows == 0 {
		o.MaxLMHeadRows = DefaultLMHeadRows
	}
	if o.MaxLMHeadRows < 64 || o.MaxLMHeadRows > MaxANEDim {
		return o, fmt.Errorf("blobplan: LM-head chunk rows %d; expected 64 to %d", o.MaxLMHeadRows, MaxANEDim)
	}
	return o, nil
}
