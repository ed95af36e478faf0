package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/bench/internal/gguf"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// tensorNames gives llama.cpp's name of each slot of a dense decoder (gguf-py's tensor map):
// the whole name for model-level slots, the part after "blk.N." for per-layer ones.
var tensorNames = map[arch.Slot]string{
	arch.EmbedTokens: "token_embd.weight",
	arch.FinalNorm:   "output_norm.weight",
	arch.LMHead:      "output.weight",
	arch.InputNorm:   "attn_norm.weight",
	arch.QProj:       "attn_q.weight",
	arch.KProj:       "attn_k.weight",
	arch.VProj:       "attn_v.weight",
	arch.QBias:       "attn_q.bias",
	arch.KBias:       "attn_k.bias",
	arch.VBias:       "attn_v.bias",
	arch.QNorm:       "attn_q_norm.weight",
	arch.KNorm:       "attn_k_norm.weight",
	arch.OProj:       "attn_output.weight",
	arch.OBias:       "attn_output.bias",
	arch.MLPNorm:     "ffn_norm.weight",
	arch.GateProj:    "ffn_gate.weight",
	arch.UpProj:      "ffn_up.weight",
	arch.DownProj:    "ffn_down.weight",
	arch.GateBias:    "ffn_gate.bias",
	arch.UpBias:      "ffn_up.bias",
	arch.DownBias:    "ffn_down.bias",
}

// ropeFreqsName is the tensor of per-frequency RoPE divisors llama.cpp reads for Llama 3.1's
// scaling (its converter computes it from rope_scaling; transformers computes it at load).
const ropeFreqsName = "rope_freqs.weight"

// tensorType is the converter's rule: 1-D tensors, norms and anything that is not a weight
// (biases) are F32; every other tensor has the file's type.
func tensorType(name string, dims int, ft fileType) gguf.TensorType {
	if dims <= 1 || strings.HasSuffix(name, "_norm.weight") || !strings.HasSuffix(name, ".weight") {
		return gguf.F32
	}
	return ft.weight
}

// tensors lists the GGUF tensors in the architecture's order (the Llama 3.1 RoPE table first,
// as the converter puts it), each converting its checkpoint tensor when written.
func (m *model) tensors(tg target, fam *arch.Family, c *arch.Config, ft fileType) ([]gguf.Tensor, error) {
	var out []gguf.Tensor
	if c.RopeScaling != nil {
		if c.RopeScaling.Type != arch.RopeLlama3 || !tg.llamaKeys {
			return nil, fmt.Errorf("%s: rope scaling %q is not one mkgguf converts for %s", filepath.Join(m.ckpt.Dir, "config.json"), c.RopeScaling.Type, c.Architecture)
		}
		f := llama3RopeFactors(c)
		out = append(out, gguf.Tensor{Name: ropeFreqsName, Type: gguf.F32, Dims: []uint64{uint64(len(f))},
			Write: func(w io.Writer) error { return binary.Write(w, binary.LittleEndian, f) }})
	}
	for _, t := range fam.Tensors(c) {
		base, ok := tensorNames[t.Slot]
		if !ok || t.Transposed {
			return nil, fmt.Errorf("%s: tensor %s (%v) has no place in llama.cpp's %s", m.ckpt.Dir, t.Name, t.Slot, tg.arch)
		}
		name := base
		if t.Slot.PerLayer() {
			name = "blk." + strconv.Itoa(t.Layer) + "." + base
		}
		r := m.ckpt.Tensor(t.Name)
		if r.DType != dtype.BF16 && r.DType != dtype.F16 && r.DType != dtype.F32 {
			return nil, &convert.FileError{File: r.File, Tensor: r.Name, Msg: fmt.Sprintf("dtype %s; mkgguf converts BF16, F16 or F32", r.RawDType)}
		}
		dims := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			dims[len(dims)-1-i] = uint64(d) // GGUF lists the innermost dimension first
		}
		var order []int
		if tg.interleavedRoPE {
			switch t.Slot {
			case arch.QProj, arch.QBias:
				order = permuteRows(t.Shape[0], c.NumAttentionHeads)
			case arch.KProj, arch.KBias:
				order = permuteRows(t.Shape[0], c.NumKeyValueHeads)
			}
		}
		typ := tensorType(name, len(dims), ft)
		out = append(out, gguf.Tensor{Name: name, Type: typ, Dims: dims,
			Write: func(w io.Writer) error { return m.writeTensor(w, r, typ, order) }})
	}
	return out, nil
}

// permuteRows returns, for each row of a q or k projection (or its bias) in llama.cpp's order,
// the checkpoint row it holds. transformers' RoPE pairs dimension i of a head with i + d/2;
// llama.cpp's LLaMA graph pairs 2i with 2i+1. So within each head of d rows, row 2i+j of the
// GGUF tensor is row j·d/2 + i of the checkpoint's (llama.cpp's LlamaModel.permute).
func permuteRows(rows, heads int) []int {
	d := rows / heads
	half := d / 2
	order := make([]int, rows)
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			for j := 0; j < 2; j++ {
				order[h*d+2*i+j] = h*d + j*half + i
			}
		}
	}
	return order
}

// writeTensor writes r converted to typ, its rows in order (nil: as stored).
func (m *model) writeTensor(w io.Writer, r *convert.TensorRef, typ gguf.TensorType, order []int) error {
	if order == nil {
		return m.convertTo(w, r, typ)
	}
	rowBytes := len(r.Data) / len(order)
	row := *r
	for _, src := range order {
		row.Data = r.Data[src*rowBytes : (src+1)*rowBytes]
		if err := m.convertTo(w, &row, typ); err != nil {
			return err
		}
	}
	return nil
}

// convertTo writes r's elements as typ: through the converter for F16 and F32 (BF16 -> F16 and
// F32 -> F16 round to nearest even, as numpy's astype does), and for BF16 as stored, or
// rounded to nearest even from F32 (from F16 by way of F32, which is exact).
func (m *model) convertTo(w io.Writer, r *convert.TensorRef, typ gguf.TensorType) error {
	switch typ {
	case gguf.F16:
		return m.conv.WriteTensor(w, r, dtype.F16)
	case gguf.F32:
		return m.conv.WriteTensor(w, r, dtype.F32)
	case gguf.BF16:
		if r.DType == dtype.BF16 {
			_, err := w.Write(r.Data)
			return err
		}
		return toBF16(w, r)
	}
	return fmt.Errorf("tensor type %v", typ)
}

// toBF16 narrows an F16 or F32 tensor to bfloat16, a block at a time.
func toBF16(w io.Writer, r *convert.TensorRef) error {
	const block = 16 << 10
	es := r.DType.Size()
	n := len(r.Data) / es
	f := make([]float32, block)
	u := make([]uint16, block)
	out := make([]byte, 2*block)
	for lo := 0; lo < n; lo += block {
		k := min(block, n-lo)
		src := r.Data[lo*es : (lo+k)*es]
		for i := 0; i < k; i++ {
			if r.DType == dtype.F16 {
				f[i] = half.F16ToF32Scalar(binary.LittleEndian.Uint16(src[2*i:]))
			} else {
				f[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		}
		half.F32ToBF16(u[:k], f[:k])
		for i, v := range u[:k] {
			binary.LittleEndian.PutUint16(out[2*i:], v)
		}
		if _, err := w.Write(out[:2*k]); err != nil {
			return err
		}
	}
	return nil
}

// llama3RopeFactors computes rope_freqs.weight for Llama 3.1's RoPE scaling as llama.cpp's
// converter does: per inverse frequency of the head, 1 for wavelengths shorter than
// original/high_freq_factor, factor for those longer than original/low_freq_factor, and between
// them 1 / ((1 - s)/factor + s) with s = (original/wavelength - low) / (high - low). llama.cpp
// divides each frequency by its factor. The converter computes in float32 torch tensors, where
// a Python scalar divided by a tensor is the tensor's reciprocal times the scalar; the steps
// below round the same way (the explicit float32 conversions also keep Go from fusing a
// multiply and an add). Only the power may differ from torch's by an ulp.
func llama3RopeFactors(c *arch.Config) []float32 {
	rs := c.RopeScaling
	dim := c.HeadDim
	factor := float32(rs.Factor)
	low := float32(rs.LowFreqFactor)
	band := float32(rs.HighFreqFactor - rs.LowFreqFactor)
	old := float32(rs.OriginalMaxPositionEmbeddings)
	lowWavelen := float32(float64(rs.OriginalMaxPositionEmbeddings) / rs.LowFreqFactor)
	highWavelen := float32(float64(rs.OriginalMaxPositionEmbeddings) / rs.HighFreqFactor)
	twoPi := float32(2 * math.Pi)
	out := make([]float32, dim/2)
	for i := range out {
		e := float32(2*i) / float32(dim)
		freq := 1 / float32(math.Pow(c.RopeTheta, float64(e)))
		wavelen := float32(float32(1/freq) * twoPi)
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = factor
		default:
			s := float32(float32(float32(1/wavelen)*old)-low) / band
			out[i] = 1 / (float32((1-s)/factor) + s)
		}
	}
	return out
}
