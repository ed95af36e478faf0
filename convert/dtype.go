package convert

import (
	"bytes"
	"fmt"
	"io"
	"unsafe"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// chunkElems is how many elements are converted per write: big enough to amortise the call,
// small enough to stay in L2 with its output.
const chunkElems = 64 << 10

// Converter converts tensors to FP16 or F32 little-endian bytes, reusing its buffers.
// The zero value is ready to use; a Converter is not safe for concurrent use.
type Converter struct {
	u16   []uint16
	f32   []float32
	Stats half.Stats // accumulated BF16 -> FP16 losses of every tensor converted so far
}

// OutputSize is the number of bytes WriteTensor writes for r converted to target.
func OutputSize(r *TensorRef, target dtype.DType) int64 {
	return int64(len(r.Data)/r.DType.Size()) * int64(target.Size())
}

// WriteTensor writes r's elements converted to target (F16 or F32) to w. BF16 -> F16 rounds to
// nearest even and records overflows and subnormals in c.Stats; BF16 -> F32 and F16 -> F32 are
// exact; F32 -> F16 rounds to nearest even.
func (c *Converter) WriteTensor(w io.Writer, r *TensorRef, target dtype.DType) error {
	if target != dtype.F16 && target != dtype.F32 {
		return fmt.Errorf("convert: target dtype %s; expected f16 or f32", target)
	}
	if r.DType == target {
		_, err := w.Write(r.Data)
		return err
	}
	if c.u16 == nil {
		c.u16 = make([]uint16, chunkElems)
		c.f32 = make([]float32, chunkElems)
	}
	es := r.DType.Size()
	n := len(r.Data) / es
	for lo := 0; lo < n; lo += chunkElems {
		k := min(chunkElems, n-lo)
		src := r.Data[lo*es : (lo+k)*es]
		var out []byte
		switch {
		case r.DType == dtype.BF16 && target == dtype.F16:
			dst := c.u16[:k]
			c.Stats.Add(half.BF16ToF16(dst, asU16(src, dst)))
			out = u16Bytes(dst)
		case r.DType == dtype.BF16 && target == dtype.F32:
			dst := c.f32[:k]
			half.BF16ToF32(dst, asU16(src, c.u16[:k]))
			out = f32Bytes(dst)
		case r.DType == dtype.F16 && target == dtype.F32:
			dst := c.f32[:k]
			half.F16ToF32(dst, asU16(src, c.u16[:k]))
			out = f32Bytes(dst)
		case r.DType == dtype.F32 && target == dtype.F16:
			dst := c.u16[:k]
			half.F32ToF16(dst, asF32(src, c.f32[:k]))
			out = u16Bytes(dst)
		default:
			return fmt.Errorf("convert: %s -> %s is not supported", r.DType, target)
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// asU16 views little-endian bytes as uint16s in place when aligned, else copies into scratch.
// (Every supported platform is little-endian.)
func asU16(b []byte, scratch []uint16) []uint16 {
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
	}
	for i := range scratch {
		scratch[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return scratch
}

// asF32 views little-endian bytes as float32s in place when aligned, else copies into scratch.
func asF32(b []byte, scratch []float32) []float32 {
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(scratch))), len(b)), b)
	return scratch[:len(b)/4]
}

func u16Bytes(s []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

func f32Bytes(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}

// WriteTensorTransposed writes the transpose of the 2-D tensor r ([rows, cols] in the
// checkpoint, e.g. GPT-2's Conv1D weights stored [in, out]) converted to target: [cols, rows]
// row-major, the [out, in] layout the CPU kernels and ANE blobs read. It converts the whole tensor
// once into memory (its size at the target precision) and writes it column by column.
func (c *Converter) WriteTensorTransposed(w io.Writer, r *TensorRef, target dtype.DType) error {
	if len(r.Shape) != 2 {
		return fmt.Errorf("convert: %s: transposing a tensor of shape %v; expected 2 dimensions", r.Name, r.Shape)
	}
	rows, cols := r.Shape[0], r.Shape[1]
	var all bytes.Buffer
	all.Grow(int(OutputSize(r, target)))
	if err := c.WriteTensor(&all, r, target); err != nil {
		return err
	}
	src, es := all.Bytes(), target.Size()
	line := make([]byte, rows*es)
	for j := 0; j < cols; j++ {
		for i := 0; i < rows; i++ {
			copy(line[i*es:(i+1)*es], src[(i*cols+j)*es:(i*cols+j+1)*es])
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}
