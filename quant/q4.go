package quant

import (
	"github.com/anepack/anepack/dtype"

	"fmt"

	"github.com/anepack/anepack/half"
)

// CheckGroup reports whether group is a valid q4 group size for rows of cols
// weights: 32, 64 or 128, dividing cols.
func CheckGroup(cols, group int) error {
	switch group {
	case 32, 64, 128:
	default:
		return fmt.Errorf("quant: q4 group size %d: want 32, 64 or 128", group)
	}
	if cols < 0 || cols%group != 0 {
		return fmt.Errorf("quant: q4 group size %d does not divide cols = %d", group, cols)
	}
	return nil
}

// Q4Sizes returns the bytes of the data, scale and offset sections of a q4
// matrix of rows x cols weights in groups of group: rows*cols/2 bytes of
// nibbles and rows*cols/group fp16 values each for scale and offset.
func Q4Sizes(rows, cols, group int) (data, scale, offset int, err error) {
	if err := CheckGroup(cols, group); err != nil {
		return 0, 0, 0, err
	}
	if rows < 0 {
		return 0, 0, 0, fmt.Errorf("quant: negative rows %d", rows)
	}
	g := rows * cols / group
	return rows * cols / 2, 2 * g, 2 * g, nil
}

// QuantizeRowQ4 quantizes one row w (len(w) = cols) in groups of group into
// data (cols/2 bytes), scale and offset (cols/group each): see the package
// documentation for the fit.
func QuantizeRowQ4(data []byte, scale, offset []uint16, w []float32, group int) error {
	return quantizeRowQ4(data, scale, offset, w, group, fitBest)
}

// quantizeRowQ4 is QuantizeRowQ4 with a choice of fit (the tests compare them).
func quantizeRowQ4(data []byte, scale, offset []uint16, w []float32, group int, fit fitMode) error {
	cols := len(w)
	if err := CheckGroup(cols, group); err != nil {
		return err
	}
	if len(data) != cols/2 || len(scale) != cols/group || len(offset) != cols/group {
		return fmt.Errorf("quant: QuantizeRowQ4: sections of %d, %d, %d for %d weights in groups of %d, want %d, %d, %d",
			len(data), len(scale), len(offset), cols, group, cols/2, cols/group, cols/group)
	}
	if err := checkFinite(w); err != nil {
		return err
	}
	var f q4Fit
	for g := 0; g < cols/group; g++ {
		scale[g], offset[g] = f.fitGroup(data[g*group/2:(g+1)*group/2], w[g*group:(g+1)*group], fit)
	}
	return nil
}

// QuantizeQ4 quantizes the rows x cols matrix w (row-major) in groups of
// group into data (rows*cols/2 bytes), scale and offset (rows*cols/group fp16
// each) with QuantizeRowQ4 on every row.
func QuantizeQ4(data []byte, scale, offset []uint16, w []float32, rows, cols, group int) error {
	if err := checkQ4("QuantizeQ4", len(data), len(scale), len(offset), rows, cols, group); err != nil {
		return err
	}
	if err := checkShape("QuantizeQ4 input", len(w), rows, cols); err != nil {
		return err
	}
	ng := cols / group
	for r := 0; r < rows; r++ {
		err := QuantizeRowQ4(data[r*cols/2:(r+1)*cols/2], scale[r*ng:(r+1)*ng], offset[r*ng:(r+1)*ng], w[r*cols:(r+1)*cols], group)
		if err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
	}
	return nil
}

// QuantizeQ4From is QuantizeQ4 reading raw little-endian src of element type
// dt (rows*cols elements) one row at a time, so only one row is ever widened
// to float32: suited to multi-gigabyte memory-mapped tensors.
func QuantizeQ4From(data []byte, scale, offset []uint16, src []byte, dt dtype.DType, rows, cols, group int) error {
	if err := checkQ4("QuantizeQ4From", len(data), len(scale), len(offset), rows, cols, group); err != nil {
		return err
	}
	sz := dt.Size()
	if sz == 0 {
		return fmt.Errorf("quant: QuantizeQ4From: unknown dtype %v", dt)
	}
	if len(src) != rows*cols*sz {
		return fmt.Errorf("quant: QuantizeQ4From: %d bytes of %v for %dx%d", len(src), dt, rows, cols)
	}
	row := make([]float32, cols)
	rb, ng := cols*sz, cols/group
	for r := 0; r < rows; r++ {
		if err := Widen(row, src[r*rb:(r+1)*rb], dt); err != nil {
			return err
		}
		err := QuantizeRowQ4(data[r*cols/2:(r+1)*cols/2], scale[r*ng:(r+1)*ng], offset[r*ng:(r+1)*ng], row, group)
		if err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
	}
	return nil
}

// DequantizeQ4 sets dst[r*cols+c] = scale[r,g] * (q[r,c] - offset[r,g]) with
// g = c/group, evaluated in float32 as the package documentation defines.
func DequantizeQ4(dst []float32, data []byte, scale, offset []uint16, rows, cols, group int) error {
	if err := checkQ4("DequantizeQ4", len(data), len(scale), len(offset), rows, cols, group); err != nil {
		return err
	}
	if err := checkShape("DequantizeQ4 output", len(dst), rows, cols); err != nil {
		return err
	}
	for i := range dst {
		g := i / group // groups never straddle rows: group divides cols
		s := half.F16ToF32Scalar(scale[g])
		z := half.F16ToF32Scalar(offset[g])
		q := data[i/2] >> (4 * (i & 1)) & 15
		dst[i] = s * (float32(q) - z)
	}
	return nil
}

// checkQ4 checks the group size and the section lengths of a q4 matrix.
func checkQ4(fn string, data, scale, offset, rows, cols, group int) error {
	if err := CheckGroup(cols, group); err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	if rows < 0 {
		return fmt.Errorf("quant: %s: negative rows %d", fn, rows)
	}
	if data != rows*cols/2 {
		return fmt.Errorf("quant: %s: data has %d bytes, want rows*cols/2 = %d", fn, data, rows*cols/2)
	}
	if n := rows * cols / group; scale != n || offset != n {
		return fmt.Errorf("quant: %s: %d scales and %d offsets, want rows*cols/group = %d", fn, scale, offset, n)
	}
	return nil
}
