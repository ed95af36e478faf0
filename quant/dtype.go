package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// Widen converts len(dst) little-endian elements of type dt (dtype.F32, F16 or BF16) from
// src to float32 (exactly: every fp16 and bf16 value is a float32). src must hold exactly
// len(dst) elements.
func Widen(dst []float32, src []byte, dt dtype.DType) error {
	if !dt.IsFloat() {
		return fmt.Errorf("quant: dtype %v; expected f32, f16 or bf16", dt)
	}
	sz := dt.Size()
	if len(src) != len(dst)*sz {
		return fmt.Errorf("quant: %d bytes of %v for %d elements, want %d", len(src), dt, len(dst), len(dst)*sz)
	}
	if len(dst) == 0 {
		return nil
	}
	// On a little-endian machine, aligned bytes already are the values: view them in place
	// (the quantizers widen every weight of a checkpoint, so a copy per element shows).
	aligned := nativeLittleEndian && uintptr(unsafe.Pointer(&src[0]))%uintptr(sz) == 0
	if dt == dtype.F32 {
		if aligned {
			copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(&src[0])), len(dst)))
			return nil
		}
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return nil
	}
	if aligned {
		widen16(dst, unsafe.Slice((*uint16)(unsafe.Pointer(&src[0])), len(dst)), dt)
		return nil
	}
	// Decode the 16-bit patterns a chunk at a time into a stack buffer, then
	// widen the chunk with half's bulk (SIMD where available) conversion.
	var buf [512]uint16
	for i := 0; i < len(dst); i += len(buf) {
		n := min(len(buf), len(dst)-i)
		for j := 0; j < n; j++ {
			buf[j] = binary.LittleEndian.Uint16(src[2*(i+j):])
		}
		widen16(dst[i:i+n], buf[:n], dt)
	}
	return nil
}

// widen16 widens fp16 or bf16 values with package half's bulk conversions.
func widen16(dst []float32, src []uint16, dt dtype.DType) {
	if dt == dtype.F16 {
		half.F16ToF32(dst, src)
	} else {
		half.BF16ToF32(dst, src)
	}
}

// nativeLittleEndian reports whether this machine stores numbers little-endian, as the
// checkpoints do.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// checkFinite returns an error naming the first NaN or infinite value of w,
// which no quantized format can represent.
func checkFinite(w []float32) error {
	if maxAbsBits(w) < 0x7f800000 {
		return nil
	}
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: weight %d is %v", i, v)
		}
	}
	return nil
}

// checkShape rejects negative shapes and a value count that does not match.
func checkShape(what string, have, rows, cols int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("quant: %s: negative shape %dx%d", what, rows, cols)
	}
	if have != rows*cols {
		return fmt.Errorf("quant: %s: %d values, want rows*cols = %d*%d = %d", what, have, rows, cols, rows*cols)
	}
	return nil
}
