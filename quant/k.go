package quant

import (
	"fmt"

	"github.com/anepack/anepack/dtype"
)

// The super-block types q4k and q6k (dtype.Q4K, dtype.Q6K) store each row as whole
// super-blocks of SuperBlock inputs, codes and scales interleaved: the package documentation
// gives the byte layout.
const (
	// SuperBlock is the inputs of one super-block.
	SuperBlock = dtype.SuperBlock
	// Q4KBlockBytes is the size of one q4k super-block: fp16 d, fp16 dmin, 12 bytes of
	// sub-block scales and mins, 128 bytes of codes (4.5 bits per weight).
	Q4KBlockBytes = 144
	// Q6KBlockBytes is the size of one q6k super-block: 128 bytes of low code bits, 64 of high
	// bits, 16 int8 sub-block scales, fp16 d (6.5625 bits per weight).
	Q6KBlockBytes = 210
)

// CheckSuperBlocks reports whether rows of cols inputs can be stored as super-blocks: cols
// must be a positive multiple of SuperBlock.
func CheckSuperBlocks(cols int) error {
	if cols <= 0 || cols%SuperBlock != 0 {
		return fmt.Errorf("quant: rows of %d inputs: the super-block types need a positive multiple of %d", cols, SuperBlock)
	}
	return nil
}

// KRowBytes returns the bytes of one row of cols inputs of the super-block type dt
// (dtype.Q4K or dtype.Q6K), or an error when cols is not a whole number of super-blocks.
func KRowBytes(dt dtype.DType, cols int) (int, error) {
	if !dt.SuperBlocks() {
		return 0, fmt.Errorf("quant: %s is not a super-block type", dt)
	}
	if err := CheckSuperBlocks(cols); err != nil {
		return 0, err
	}
	return cols / SuperBlock * dt.BlockBytes(), nil
}

// checkK checks the buffers of a rows x cols super-block matrix: data holds rows whole rows,
// values (the float side: weights in, or dequantized weights out) rows*cols values and imp,
// when not nil, one importance per input column.
func checkK(fn string, dt dtype.DType, data, values, imp, rows, cols int, hasImp bool) error {
	rb, err := KRowBytes(dt, cols)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	if rows < 0 {
		return fmt.Errorf("quant: %s: negative rows %d", fn, rows)
	}
	if data != rows*rb {
		return fmt.Errorf("quant: %s: %d bytes of %s data, want rows*%d = %d", fn, data, dt, rb, rows*rb)
	}
	if values != rows*cols {
		return fmt.Errorf("quant: %s: %d values, want rows*cols = %d*%d = %d", fn, values, rows, cols, rows*cols)
	}
	if hasImp && imp != cols {
		return fmt.Errorf("quant: %s: %d importances, want one per input column (%d)", fn, imp, cols)
	}
	return nil
}

// checkImportance rejects an importance vector that is not finite and non-negative: it comes
// from a calibration run, and a NaN there would silently pick arbitrary scales.
func checkImportance(imp []float32) error {
	for i, v := range imp {
		if !(v >= 0) || v > 3.4e38 {
			return fmt.Errorf("quant: importance of input %d is %v; want a finite value >= 0", i, v)
		}
	}
	return nil
}

// quantizeKFrom is the body of QuantizeQ4KFrom and QuantizeQ6KFrom: it widens one row of src
// at a time into float32 scratch and quantizes it with row.
func quantizeKFrom(fn string, dt dtype.DType, data, src []byte, st dtype.DType, rows, cols int, imp []float32,
	row func(dst []byte, w, imp []float32, s *kScratch)) error {
	sz := st.Size()
	if !st.IsFloat() {
		return fmt.Errorf("quant: %s: source dtype %v; expected f32, f16 or bf16", fn, st)
	}
	if len(src) != rows*cols*sz {
		return fmt.Errorf("quant: %s: %d bytes of %v for %dx%d", fn, len(src), st, rows, cols)
	}
	if err := checkK(fn, dt, len(data), rows*cols, len(imp), rows, cols, imp != nil); err != nil {
		return err
	}
	if err := checkImportance(imp); err != nil {
		return err
	}
	rb := cols / SuperBlock * dt.BlockBytes()
	w := make([]float32, cols)
	var s kScratch
	for r := 0; r < rows; r++ {
		if err := Widen(w, src[r*cols*sz:(r+1)*cols*sz], st); err != nil {
			return err
		}
		if err := checkFinite(w); err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
		row(data[r*rb:(r+1)*rb], w, imp, &s)
	}
	return nil
}
