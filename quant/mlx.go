package quant

import (
	"github.com/anepack/anepack/dtype"

	"fmt"
	"math"

	"github.com/anepack/anepack/half"
)

// mlxMaxOffset bounds the offset FromMLX4 stores. An MLX group whose values
// are all far from 0 relative to their spread has bias/scale beyond fp16's
// range (or beyond where it still holds integers exactly, 2048); its scale
// is then enlarged until -bias/scale fits, which costs at most
// 15*|bias|/mlxMaxOffset per weight and is included in the reported error.
const mlxMaxOffset = 2048

// FromMLX4 converts one 4-bit tensor of an mlx-community checkpoint (MLX
// affine quantization, w = scale*q + bias) to the q4 format without
// requantizing it:
//
//   - weight is the raw little-endian bytes of MLX's uint32 [rows, cols/8]
//     (8 nibbles per word, element 0 in bits 0-3); that is exactly the q4 data
//     byte order, so it is copied into data (rows*cols/2 bytes) unchanged;
//   - scales and biases are the raw bytes of MLX's [rows, cols/group] tensors
//     of element type dt (dtype.BF16 or dtype.F16, sometimes dtype.F32);
//   - scale gets the scales rounded to fp16 and offset gets -bias/scale
//     rounded to fp16 (group is MLX's group size, usually 64).
//
// It returns the largest |scale*q + bias - q4 value| over all weights,
// computed in float64 from the exact MLX parameters: the only error the
// conversion adds.
func FromMLX4(data []byte, scale, offset []uint16, weight, scales, biases []byte, dt dtype.DType, rows, cols, group int) (maxDiff float64, err error) {
	if err := checkQ4("FromMLX4", len(data), len(scale), len(offset), rows, cols, group); err != nil {
		return 0, err
	}
	if len(weight) != rows*cols/2 {
		return 0, fmt.Errorf("quant: FromMLX4: weight has %d bytes, want %d (uint32 [%d, %d])", len(weight), rows*cols/2, rows, cols/8)
	}
	ng := rows * cols / group
	s, b := make([]float32, ng), make([]float32, ng)
	if err := Widen(s, scales, dt); err != nil {
		return 0, fmt.Errorf("FromMLX4 scales: %w", err)
	}
	if err := Widen(b, biases, dt); err != nil {
		return 0, fmt.Errorf("FromMLX4 biases: %w", err)
	}
	if err := checkFinite(s); err != nil {
		return 0, fmt.Errorf("FromMLX4 scales: %w", err)
	}
	if err := checkFinite(b); err != nil {
		return 0, fmt.Errorf("FromMLX4 biases: %w", err)
	}
	copy(data, weight)
	for g := range ng {
		scale[g], offset[g] = mlxGroup(s[g], b[g])
		qs := half.F16ToF32Scalar(scale[g])
		qz := half.F16ToF32Scalar(offset[g])
		for i := g * group; i < (g+1)*group; i++ {
			q := data[i/2] >> (4 * (i & 1)) & 15
			want := float64(s[g])*float64(q) + float64(b[g])
			got := float64(qs * (float32(q) - qz))
			maxDiff = max(maxDiff, math.Abs(got-want))
		}
	}
	return maxDiff, nil
}

// mlxGroup returns the fp16 scale and offset bits for MLX's scale s and bias
// b: scale = s, offset = -b/s, with the scale enlarged when the offset would
// not fit (see mlxMaxOffset).
func mlxGroup(s, b float32) (uint16, uint16) {
	sb := half.F32ToF16Scalar(s)
	sf := float64(half.F16ToF32Scalar(sb))
	if sf == 0 || math.Abs(float64(b)/sf) > mlxMaxOffset {
		if b == 0 {
			return sb, 0
		}
		// Keep the sign of s (MLX stores negative scales for groups whose
		// edge is the max) and grow |s| just enough.
		need := math.Abs(float64(b)) / mlxMaxOffset
		if s < 0 {
			need = -need
		}
		sb = half.F32ToF16Scalar(float32(need))
		sf = float64(half.F16ToF32Scalar(sb))
		if math.Abs(float64(b)/sf) > mlxMaxOffset { // rounded down: one ulp up
			sb++
			sf = float64(half.F16ToF32Scalar(sb))
		}
	}
	return sb, half.F32ToF16Scalar(float32(-float64(b) / sf))
}
