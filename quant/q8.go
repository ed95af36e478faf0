package quant

import (
	"github.com/anepack/anepack/dtype"

	"fmt"
	"math"

	"github.com/anepack/anepack/half"
)

// Q8Sizes returns the bytes of the data and scale sections of a q8 matrix of
// rows x cols weights: rows*cols int8 and rows fp16.
func Q8Sizes(rows, cols int) (data, scale int) {
	return rows * cols, 2 * rows
}

// QuantizeRowQ8 quantizes one row w into q (len(q) == len(w)) and returns its
// fp16 scale bits: scale = max|w|/127 rounded to fp16 and q = w/scale rounded
// to the nearest integer (ties to even) and clamped to [-127, 127], the
// division using the stored (rounded) scale so that scale*q is the value the
// kernels see. An all-zero row gets scale 0 and q 0.
func QuantizeRowQ8(q []int8, w []float32) (uint16, error) {
	if len(q) != len(w) {
		return 0, fmt.Errorf("quant: QuantizeRowQ8: %d outputs for %d weights", len(q), len(w))
	}
	m := maxAbsBits(w)
	if m >= 0x7f800000 {
		return 0, checkFinite(w)
	}
	amax := math.Float32frombits(m)
	sb := half.F32ToF16Scalar(amax / 127)
	s := float64(half.F16ToF32Scalar(sb))
	if math.IsInf(s, 0) {
		return 0, fmt.Errorf("quant: QuantizeRowQ8: max |w| = %g overflows an fp16 scale", amax)
	}
	if s == 0 {
		// All zero, or so small that the scale underflows fp16: zero is the
		// closest representable row either way.
		clear(q)
		return 0, nil
	}
	// q = roundEven(w/s), computed as w*(1/s): one multiplication instead of a division per
	// weight. The product is within |w/s|*2^-52 of the quotient, so both round to the same
	// integer unless the product lies within 2^-40 of a half-integer; those rare weights (ties
	// on a grid, mostly) are divided exactly as the definition says. Beyond ±127.5 both clamp.
	r := 1 / s
	q = q[:len(w)]
	done := 0
	if useQ8Asm && len(w) >= 8 {
		// The same in float32, eight at a time; the kernel marks the weights near a tie,
		// which float32 can not decide, with -128 (see q8RowAVX2), and they are divided here.
		done = len(w) &^ 7
		if q8RowAVX2(q[:done], w[:done], float32(r)) {
			for i, k := range q[:done] {
				if k == -128 {
					q[i] = int8(math.RoundToEven(max(-127, min(127, float64(w[i])/s))))
				}
			}
		}
	}
	for i := done; i < len(w); i++ {
		v := w[i]
		x := float64(float64(v) * r) // rounded, not fused into the next addition
		y := x + roundMagic
		k := int64(math.Float64bits(y)) - roundMagicBits
		if f := x - (y - roundMagic); f > 0.5-0x1p-40 || f < -0.5+0x1p-40 {
			k = int64(math.RoundToEven(max(-128, min(128, float64(v)/s))))
		}
		q[i] = int8(min(max(k, -127), 127))
	}
	return sb, nil
}

// QuantizeQ8 quantizes the rows x cols matrix w (row-major) into data
// (rows*cols) and scale (rows) with QuantizeRowQ8 on every row.
func QuantizeQ8(data []int8, scale []uint16, w []float32, rows, cols int) error {
	if err := checkQ8("QuantizeQ8", len(data), len(scale), rows, cols); err != nil {
		return err
	}
	if err := checkShape("QuantizeQ8 input", len(w), rows, cols); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		s, err := QuantizeRowQ8(data[r*cols:(r+1)*cols], w[r*cols:(r+1)*cols])
		if err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
		scale[r] = s
	}
	return nil
}

// QuantizeQ8From is QuantizeQ8 reading raw little-endian src of element type
// dt (rows*cols elements) one row at a time, so only one row is ever widened
// to float32: suited to multi-gigabyte memory-mapped tensors.
func QuantizeQ8From(data []int8, scale []uint16, src []byte, dt dtype.DType, rows, cols int) error {
	if err := checkQ8("QuantizeQ8From", len(data), len(scale), rows, cols); err != nil {
		return err
	}
	sz := dt.Size()
	if sz == 0 {
		return fmt.Errorf("quant: QuantizeQ8From: unknown dtype %v", dt)
	}
	if err := checkShape("QuantizeQ8From input", len(src)/sz, rows, cols); err != nil || len(src)%sz != 0 {
		return fmt.Errorf("quant: QuantizeQ8From: %d bytes of %v for %dx%d", len(src), dt, rows, cols)
	}
	row := make([]float32, cols)
	rb := cols * sz
	for r := 0; r < rows; r++ {
		if err := Widen(row, src[r*rb:(r+1)*rb], dt); err != nil {
			return err
		}
		s, err := QuantizeRowQ8(data[r*cols:(r+1)*cols], row)
		if err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
		scale[r] = s
	}
	return nil
}

// maxAbsBits returns the largest |w| of w as float32 bits: with the sign cleared, finite floats
// order like their bits, and NaN and Inf lie above every finite value, so this is also the
// finite check (the result is at least 0x7f800000 if some value is not finite).
func maxAbsBits(w []float32) uint32 {
	var m uint32
	done := 0
	if useQ8Asm {
		done = len(w) &^ 31
		if done > 0 {
			m = maxAbsBitsAVX2(w[:done])
		}
	}
	for _, v := range w[done:] {
		m = max(m, math.Float32bits(v)&0x7fffffff)
	}
	return m
}

// DequantizeQ8 sets dst[r*cols+c] = scale[r] * data[r*cols+c] (in float32).
func DequantizeQ8(dst []float32, data []int8, scale []uint16, rows, cols int) error {
	if err := checkQ8("DequantizeQ8", len(data), len(scale), rows, cols); err != nil {
		return err
	}
	if err := checkShape("DequantizeQ8 output", len(dst), rows, cols); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		s := half.F16ToF32Scalar(scale[r])
		for c, q := range data[r*cols : (r+1)*cols] {
			dst[r*cols+c] = s * float32(q)
		}
	}
	return nil
}

// checkQ8 checks the section lengths of a q8 matrix.
func checkQ8(fn string, data, scale, rows, cols int) error {
	// The name is joined only on error: DequantizeQ8 runs per decoded token (the embedding
	// lookup of a q8 tied embedding), which must not allocate.
	if rows < 0 || cols < 0 || data != rows*cols {
		return checkShape(fn+" data", data, rows, cols)
	}
	if scale != rows {
		return fmt.Errorf("quant: %s: %d scales for %d rows", fn, scale, rows)
	}
	return nil
}
