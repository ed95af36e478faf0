package pack

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"sync"
	"unsafe"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/quant"
)

// quantized is one weight quantized in memory, ready to be written as its blob records: data
// first, then scale (and offset), the layout package blobplan gives them.
type quantized struct {
	data, scale, offset []byte
}

// part returns the payload of one record part.
func (q *quantized) part(p string) []byte {
	switch p {
	case "scale":
		return q.scale
	case "offset":
		return q.offset
	}
	return q.data
}

// quantize quantizes ref (a whole weight, or the rows of an LM-head chunk) as dt (Q8 or Q4 with
// group). A weight the checkpoint stores [in, out] is first transposed into float32. The rows
// are split over every core: the q4 quantizer searches each group's scale and offset, which
// costs far more than reading the weights.
func (b *builder) quantize(ref *convert.TensorRef, transposed bool, dt dtype.DType, group int) (*quantized, error) {
	src, srcType := ref.Data, ref.DType
	rows, cols := ref.Shape[0], ref.Shape[1]
	if transposed {
		var buf bytes.Buffer
		if err := b.conv.WriteTensorTransposed(&buf, ref, dtype.F32); err != nil {
			return nil, err
		}
		src, srcType, rows, cols = buf.Bytes(), dtype.F32, cols, rows
	}
	es := srcType.Size()
	q := &quantized{}
	var side int // scale (and offset) values per row
	switch dt {
	case dtype.Q8:
		side = 1
		q.data = make([]byte, rows*cols)
	case dtype.Q4:
		if err := quant.CheckGroup(cols, group); err != nil {
			return nil, fmt.Errorf("%s: %w", ref.Name, err)
		}
		side = cols / group
		q.data = make([]byte, rows*cols/2)
		q.offset = make([]byte, 2*rows*side)
	default:
		return nil, fmt.Errorf("quantize %s: %s is not a quantized type", ref.Name, dt)
	}
	q.scale = make([]byte, 2*rows*side)
	workers := min(goruntime.NumCPU(), max(1, rows/64))
	step := (rows + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		a, z := w*step, min(rows, (w+1)*step)
		if a >= z {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := src[a*cols*es : z*cols*es]
			scale := u16s(q.scale[2*a*side : 2*z*side])
			if dt == dtype.Q8 {
				data := unsafe.Slice((*int8)(unsafe.Pointer(&q.data[a*cols])), (z-a)*cols)
				errs[w] = quant.QuantizeQ8From(data, scale, in, srcType, z-a, cols)
			} else {
				errs[w] = quant.QuantizeQ4From(q.data[a*cols/2:z*cols/2], scale, u16s(q.offset[2*a*side:2*z*side]), in, srcType, z-a, cols, group)
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("quantizing %s (rows from %d): %w", ref.Name, w*step, err)
		}
	}
	return q, nil
}

// u16s views little-endian bytes as uint16s in place (every supported platform is
// little-endian; the slices come from make, so they are aligned).
func u16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}
