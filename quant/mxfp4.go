package quant

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/dtype"
)

// FP4 is the value of each FP4 E2M1 code: bit 3 is the sign, bits 0-2 the magnitude (code 8 is
// negative zero, as in the OCP format and in the tables of the gpt-oss reference code).
var FP4 = [16]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6, negZero, -0.5, -1, -1.5, -2, -3, -4, -6}

// negZero is -0.0, which a Go constant expression cannot spell.
var negZero = float32(math.Copysign(0, -1))

// e8m0NaN is the E8M0 code that the OCP format reserves for NaN.
const e8m0NaN = 255

// E8M0 returns the scale an E8M0 code stands for: 2^(e−127), exact in float32 (2^−127, code 0,
// is a subnormal), and NaN for code 255.
func E8M0(e uint8) float32 {
	switch e {
	case e8m0NaN:
		return float32(math.NaN())
	case 0:
		return math.Float32frombits(0x00400000)
	}
	return math.Float32frombits(uint32(e) << 23)
}

// MXFP4Sizes returns the bytes of an MXFP4 matrix's codes (rows·cols/2) and scales
// (rows·cols/32), or an error when cols is not a positive multiple of dtype.MXBlock.
func MXFP4Sizes(rows, cols int) (codes, scales int, err error) {
	if cols <= 0 || cols%dtype.MXBlock != 0 || rows < 0 {
		return 0, 0, fmt.Errorf("quant: an mxfp4 matrix of %d x %d: the columns must be a positive multiple of %d", rows, cols, dtype.MXBlock)
	}
	return rows * cols / 2, rows * cols / dtype.MXBlock, nil
}

// CheckMXFP4 checks an MXFP4 matrix of rows x cols: the lengths of its codes and scales, and
// that no scale is the NaN code 255 (a checkpoint with one is damaged: every weight of that
// block would be NaN). The error names the row and block.
func CheckMXFP4(codes, scales []byte, rows, cols int) error {
	nc, ns, err := MXFP4Sizes(rows, cols)
	if err != nil {
		return err
	}
	if len(codes) != nc {
		return fmt.Errorf("quant: %d bytes of mxfp4 codes for %d x %d weights; expected %d (two per byte)", len(codes), rows, cols, nc)
	}
	if len(scales) != ns {
		return fmt.Errorf("quant: %d mxfp4 scales for %d x %d weights; expected %d (one per %d inputs)", len(scales), rows, cols, ns, dtype.MXBlock)
	}
	for i, e := range scales {
		if e == e8m0NaN {
			nb := cols / dtype.MXBlock
			return fmt.Errorf("quant: mxfp4 scale of row %d, block %d is 255, the NaN code of E8M0", i/nb, i%nb)
		}
	}
	return nil
}

// DequantizeRowMXFP4 writes the len(dst) weights of one MXFP4 row (a multiple of 32): codes
// holds len(dst)/2 bytes, scales len(dst)/32 codes, and weight c is FP4[q]·E8M0(e) in float32,
// q its code and e its block's scale. Every such product is exact (a power of two times a
// number of two significant bits), apart from overflow to ±Inf for the largest scales.
func DequantizeRowMXFP4(dst []float32, codes, scales []byte) {
	for b, e := range scales[:len(dst)/dtype.MXBlock] {
		s := E8M0(e)
		y := dst[b*dtype.MXBlock : (b+1)*dtype.MXBlock]
		for i, q := range codes[b*dtype.MXBlock/2 : (b+1)*dtype.MXBlock/2] {
			y[2*i] = FP4[q&15] * s
			y[2*i+1] = FP4[q>>4] * s
		}
	}
}

// DequantizeMXFP4 writes the rows x cols weights of an MXFP4 matrix to dst, row-major, after
// checking it with CheckMXFP4.
func DequantizeMXFP4(dst []float32, codes, scales []byte, rows, cols int) error {
	if err := CheckMXFP4(codes, scales, rows, cols); err != nil {
		return err
	}
	if len(dst) != rows*cols {
		return fmt.Errorf("quant: dst has %d values for %d x %d weights", len(dst), rows, cols)
	}
	nb := cols / dtype.MXBlock
	for r := 0; r < rows; r++ {
		DequantizeRowMXFP4(dst[r*cols:(r+1)*cols], codes[r*cols/2:(r+1)*cols/2], scales[r*nb:(r+1)*nb])
	}
	return nil
}
