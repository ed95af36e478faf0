package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// mlxQuant is the quantization an MLX checkpoint declares in config.json ("quantization", or
// "quantization_config"): {"group_size": 64, "bits": 4} for mlx-community's *-4bit models.
type mlxQuant struct {
	GroupSize int
	Bits      int
}

// readMLXQuant returns the checkpoint's MLX quantization, or nil when it declares none. Only
// uniform 4-bit affine quantization is read: it is stored in the int4 layout as it is.
func readMLXQuant(configJSON []byte, file string) (*mlxQuant, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &raw); err != nil {
		return nil, nil // ParseConfig has already reported it
	}
	field := "quantization"
	q, ok := raw[field]
	if !ok {
		field = "quantization_config"
		if q, ok = raw[field]; !ok || string(q) == "null" {
			return nil, nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(q, &m); err != nil {
		return nil, fmt.Errorf("%s: field %q: expected an object, got %s", file, field, q)
	}
	if _, isMLX := m["group_size"]; !isMLX {
		// Another tool's quantization_config (GPTQ, AWQ, bitsandbytes): the tensors say which,
		// and convert.Checkpoint.Check names it.
		return nil, nil
	}
	var mq mlxQuant
	for k, v := range m {
		var err error
		switch k {
		case "group_size":
			err = json.Unmarshal(v, &mq.GroupSize)
		case "bits":
			err = json.Unmarshal(v, &mq.Bits)
		case "mode":
			var mode string
			if json.Unmarshal(v, &mode) != nil || mode != "affine" {
				return nil, fmt.Errorf("%s: field %q.mode is %s; only MLX's affine quantization is read", file, field, v)
			}
		default:
			return nil, fmt.Errorf("%s: field %q.%s: per-layer (mixed-precision) MLX quantization is not read; use a uniform 4-bit checkpoint or the unquantized one", file, field, k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: field %q.%s: expected an integer, got %s", file, field, k, v)
		}
	}
	if mq.Bits != 4 {
		return nil, fmt.Errorf("%s: field %q.bits is %d; anepack reads MLX 4-bit checkpoints (the int4 layout is the same bytes); use the unquantized checkpoint with --dtype int8 instead", file, field, mq.Bits)
	}
	if mq.GroupSize != 32 && mq.GroupSize != 64 && mq.GroupSize != 128 {
		return nil, fmt.Errorf("%s: field %q.group_size is %d; expected 32, 64 or 128", file, field, mq.GroupSize)
	}
	return &mq, nil
}

// fromMLX converts an MLX 4-bit weight (or rows [r0, r1) of one, for an LM-head chunk; r1 == 0
// means all) into the q4 records without requantizing: the codes are copied, the scales rounded
// to fp16 and the offsets set to -bias/scale.
func fromMLX(q *convert.MLX4, group, r0, r1 int) (*quantized, error) {
	w, s, b := q.Weight, q.Scales, q.Biases
	if r1 > 0 {
		w, s, b = w.Rows(r0, r1), s.Rows(r0, r1), b.Rows(r0, r1)
	}
	rows, cols := w.Shape[0], w.Shape[1]*8
	out := &quantized{data: make([]byte, rows*cols/2), scale: make([]byte, 2*rows*cols/group), offset: make([]byte, 2*rows*cols/group)}
	if _, err := quant.FromMLX4(out.data, u16s(out.scale), u16s(out.offset), w.Data, s.Data, b.Data, s.DType, rows, cols, group); err != nil {
		return nil, fmt.Errorf("%s: %w", w.Name, err)
	}
	return out, nil
}

// writeMLXDense writes an MLX 4-bit weight dequantized to fp16 (an untied embedding, which the
// bundle keeps fp16 like every embedding it reads one row at a time).
func (b *builder) writeMLXDense(w *bytes.Buffer, q *convert.MLX4, group int) error {
	p, err := fromMLX(q, group, 0, 0)
	if err != nil {
		return err
	}
	rows, cols := q.Weight.Shape[0], q.Weight.Shape[1]*8
	row := make([]float32, cols)
	h := make([]uint16, cols)
	for r := 0; r < rows; r++ {
		g := cols / group
		if err := quant.DequantizeQ4(row, p.data[r*cols/2:(r+1)*cols/2], u16s(p.scale)[r*g:(r+1)*g], u16s(p.offset)[r*g:(r+1)*g], 1, cols, group); err != nil {
			return err
		}
		half.F32ToF16(h, row)
		w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*cols))
	}
	return nil
}

// mlxTarget checks the requested storage against an MLX 4-bit checkpoint: it packs as int4 in
// the checkpoint's group size (the same bytes), and nothing else.
func mlxTarget(q *mlxQuant, requested string, group int) (dtype.DType, error) {
	if requested != "" {
		if t, err := targetDType(requested); err != nil || t != dtype.Q4 {
			return dtype.Invalid, fmt.Errorf("the checkpoint is MLX 4-bit; it packs as --dtype int4 (its own bytes), not %s; for another dtype use the unquantized checkpoint", requested)
		}
	}
	if group != 0 && group != q.GroupSize {
		return dtype.Invalid, fmt.Errorf("the checkpoint is MLX 4-bit in groups of %d; --group-size %d would need requantizing", q.GroupSize, group)
	}
	return dtype.Q4, nil
}
