package convert

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
)

// MXFP4 is a weight a checkpoint stores in the OCP microscaling FP4 format, as gpt-oss's keep
// their experts: for the weight X, `X_blocks` (U8 [..., rows, cols/32, 16], two FP4 codes a
// byte, the even element in the low nibble) and `X_scales` (U8 [..., rows, cols/32], an E8M0
// exponent per block of 32 inputs). Their bytes are dtype.MXFP4's codes and scales as they
// are: Codes and Scales return them without a copy.
type MXFP4 struct {
	Blocks, Scales *TensorRef
}

// Codes returns the weight's codes, [rows, cols/2] bytes, a sub-slice of the mapping.
func (q *MXFP4) Codes() []byte { return q.Blocks.Data }

// ScaleBytes returns the weight's E8M0 scales, [rows, cols/32] bytes, a sub-slice of the
// mapping.
func (q *MXFP4) ScaleBytes() []byte { return q.Scales.Data }

// MXFP4 returns the blocks and scales of the weight called name (the architecture's name; a
// trailing ".weight" is dropped before the suffixes are added), or nil when the checkpoint
// does not store it so.
func (c *Checkpoint) MXFP4(name string) *MXFP4 {
	base := strings.TrimSuffix(name, ".weight")
	b, s := c.Tensor(base+"_blocks"), c.Tensor(base+"_scales")
	if b == nil || s == nil {
		return nil
	}
	return &MXFP4{Blocks: b, Scales: s}
}

// checkMXFP4 checks the MXFP4 parts of weight t, whose shape [..., rows, cols] is the bundle's
// (an expert weight [experts, out, in]): the blocks U8 [..., rows, cols/32, 16], the scales U8
// [..., rows, cols/32] with no NaN code. It returns the checkpoint names of the two tensors,
// or ok false when t is not stored so.
func (c *Checkpoint) checkMXFP4(t arch.Tensor) (names []string, ok bool, err error) {
	q := c.MXFP4(t.Name)
	if q == nil {
		return nil, false, nil
	}
	prefix, cols := t.Shape[:len(t.Shape)-1], t.Shape[len(t.Shape)-1]
	rows := arch.Elements(prefix)
	if cols%dtype.MXBlock != 0 {
		return nil, false, &FileError{File: q.Blocks.File, Tensor: q.Blocks.Name, Msg: fmt.Sprintf("MXFP4 weight of %d inputs; expected a multiple of %d (one scale per block of %d)", cols, dtype.MXBlock, dtype.MXBlock)}
	}
	nb := cols / dtype.MXBlock
	wantBlocks := append(append([]int(nil), prefix...), nb, dtype.MXBlock/2)
	wantScales := append(append([]int(nil), prefix...), nb)
	for _, p := range []struct {
		r    *TensorRef
		want []int
		what string
	}{
		{q.Blocks, wantBlocks, fmt.Sprintf("%d bytes: 16 per block of 32 inputs, %d blocks in each of %d rows", rows*cols/2, nb, rows)},
		{q.Scales, wantScales, fmt.Sprintf("%d scales: one per block of 32 inputs, %d in each of %d rows", rows*nb, nb, rows)},
	} {
		if p.r.DType != dtype.U8 {
			return nil, false, &FileError{File: p.r.File, Tensor: p.r.Name, Msg: fmt.Sprintf("dtype %s; expected U8", p.r.RawDType)}
		}
		if !equalInts(p.r.Shape, p.want) {
			return nil, false, &FileError{File: p.r.File, Tensor: p.r.Name, Msg: fmt.Sprintf("shape %v (%d elements); %s with this config.json expects %v (%s)",
				p.r.Shape, arch.Elements(p.r.Shape), t.Name, p.want, p.what)}
		}
	}
	// E8M0 reserves 255 for NaN: every weight of such a block would be NaN (quant.CheckMXFP4
	// refuses it too).
	if i := bytes.IndexByte(q.ScaleBytes(), 255); i >= 0 {
		return nil, false, &FileError{File: q.Scales.File, Tensor: q.Scales.Name,
			Msg: fmt.Sprintf("scale of row %d, block %d is 255, the NaN code of E8M0; expected an exponent 0 to 254", i/nb, i%nb)}
	}
	return []string{q.Blocks.Name, q.Scales.Name}, true, nil
}
