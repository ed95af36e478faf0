package pack

import (
	"bytes"
	"fmt"
	"io"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/quant"
)

// quantized is one weight quantized in memory, ready to be written as its blob records: data
// first, then scale (and offset), the layout package blobplan gives them. One being quantized by
// quantize fills in block by block; writeData writes the data record as the blocks complete.
type quantized struct {
	data, scale, offset []byte

	// Set while quantizing: rows of rowBytes data bytes in blocks of blockRows, block i done
	// when done[i] is closed (then errs[i] holds its error, if any). nil done: complete.
	rowBytes, blockRows int
	done                []chan struct{}
	errs                []error
	stop                atomic.Bool // writeData failed: take no more blocks
	workers             sync.WaitGroup
}

// part returns the payload of one record part. The data part is written with writeData.
func (q *quantized) part(p string) []byte {
	switch p {
	case "scale":
		return q.scale
	case "offset":
		return q.offset
	}
	return q.data
}

// blockWeights is about how many weights one quantization block holds: small enough that the
// blocks of even a small weight keep every core busy and the first one is ready to be written
// soon, large enough that handing them out costs nothing.
const blockWeights = 64 << 10

// quantize starts quantizing ref (a whole weight, or the rows of an LM-head chunk) as dt (Q8 or
// Q4 with group) and returns at once. A weight the checkpoint stores [in, out] is first
// transposed into float32. Every core takes blocks of rows in turn, so a core slowed down by
// other work delays only its current block, and writeData writes each block of the data record
// while later ones are still being quantized.
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
		q.rowBytes = cols
	case dtype.Q4:
		if err := quant.CheckGroup(cols, group); err != nil {
			return nil, fmt.Errorf("%s: %w", ref.Name, err)
		}
		side = cols / group
		q.rowBytes = cols / 2
	default:
		return nil, fmt.Errorf("quantize %s: %s is not a quantized type", ref.Name, dt)
	}
	// The buffers of the previous weight are reused: it has been written by now, and fresh
	// memory costs a page fault per 4 KiB on first touch (and the collector's time).
	q.data = grow(&b.qbuf.data, rows*q.rowBytes)
	q.scale = grow(&b.qbuf.scale, 2*rows*side)
	if dt == dtype.Q4 {
		q.offset = grow(&b.qbuf.offset, 2*rows*side)
	}
	q.blockRows = max(1, blockWeights/max(1, cols))
	nb := (rows + q.blockRows - 1) / q.blockRows
	q.done, q.errs = make([]chan struct{}, nb), make([]error, nb)
	for i := range q.done {
		q.done[i] = make(chan struct{})
	}
	var next atomic.Int64
	quantizeBlock := func(i int) error {
		a, z := i*q.blockRows, min(rows, (i+1)*q.blockRows)
		in := src[a*cols*es : z*cols*es]
		scale := u16s(q.scale[2*a*side : 2*z*side])
		if dt == dtype.Q8 {
			data := unsafe.Slice((*int8)(unsafe.Pointer(&q.data[a*cols])), (z-a)*cols)
			return quant.QuantizeQ8From(data, scale, in, srcType, z-a, cols)
		}
		return quant.QuantizeQ4From(q.data[a*q.rowBytes:z*q.rowBytes], scale, u16s(q.offset[2*a*side:2*z*side]), in, srcType, z-a, cols, group)
	}
	for range min(goruntime.NumCPU(), nb) {
		q.workers.Add(1)
		go func() {
			defer q.workers.Done()
			for !q.stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= nb {
					return
				}
				if err := quantizeBlock(i); err != nil {
					q.errs[i] = fmt.Errorf("quantizing %s (rows from %d): %w", ref.Name, i*q.blockRows, err)
				}
				close(q.done[i])
			}
		}()
	}
	return q, nil
}

// writeData hands the data record to write block by block as the blocks are quantized, and
// returns once all are, with the first error of either. On an error the blocks not yet started
// are abandoned; it returns only after every worker has stopped.
func (q *quantized) writeData(write func([]byte) error) error {
	if q.done == nil {
		return write(q.data) // complete already (an MLX weight's own codes)
	}
	err := func() error {
		for i, done := range q.done {
			<-done
			if q.errs[i] != nil {
				return q.errs[i]
			}
			a := i * q.blockRows * q.rowBytes
			if err := write(q.data[a:min(len(q.data), a+q.blockRows*q.rowBytes)]); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		q.stop.Store(true)
	}
	q.workers.Wait()
	return err
}

// writeQuantized quantizes the rows of refs, one weight after another, as dt (Q8 or Q4 with
// group), writes their codes to w as they are ready and drops each source's pages once it is
// written. It returns the whole record's scales (and offsets), which the next records hold:
// a stacked expert weight is one record of every expert's rows, while each expert is quantized
// (and its source read) in turn.
func (b *builder) writeQuantized(w io.Writer, refs []*convert.TensorRef, transposed bool, dt dtype.DType, group int) (*quantized, error) {
	var scale, offset []byte
	var q *quantized
	for _, ref := range refs {
		var err error
		if q, err = b.quantize(ref, transposed, dt, group); err != nil {
			return nil, err
		}
		// Written while the rest is quantized; the scale and offset records follow.
		if err := q.writeData(func(p []byte) error { return b.writeRaw(w, p) }); err != nil {
			return nil, err
		}
		b.ckpt.Done(ref) // drop the source pages, as writeTensor does
		if len(refs) > 1 {
			// The next weight reuses q's buffers.
			scale, offset = append(scale, q.scale...), append(offset, q.offset...)
		}
	}
	if len(refs) == 1 {
		return q, nil
	}
	return &quantized{scale: scale, offset: offset}, nil
}

// quantBuffers are the buffers of the weight last quantized, for the next one.
type quantBuffers struct {
	data, scale, offset []byte
}

// grow returns (*buf)[:n], reallocating *buf when it is shorter than n. The contents are left
// as they were: the quantizers overwrite every byte.
func grow(buf *[]byte, n int) []byte {
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	return (*buf)[:n]
}

// u16s views little-endian bytes as uint16s in place (every supported platform is
// little-endian; the slices come from make, so they are aligned).
func u16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}
