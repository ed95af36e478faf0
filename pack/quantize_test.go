package pack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/quant"
)

// bf16Weight returns a rows x cols BF16 tensor of random weights.
func bf16Weight(rows, cols int, seed uint64) *convert.TensorRef {
	r := rand.New(rand.NewPCG(seed, seed))
	data := make([]byte, 2*rows*cols)
	for i := 0; i < rows*cols; i++ {
		binary.LittleEndian.PutUint16(data[2*i:], half.F32ToBF16Scalar(float32(r.NormFloat64()*0.03)))
	}
	return &convert.TensorRef{Name: "w", DType: dtype.BF16, Shape: []int{rows, cols}, Data: data}
}

// TestQuantizeStreams checks that the block-wise quantization, written as the blocks complete,
// gives the bytes of one whole-tensor quantization, for q8 and q4, for a weight of several
// blocks whose last one is short, and again with the buffers the next weight reuses.
func TestQuantizeStreams(t *testing.T) {
	b := &builder{}
	for _, tc := range []struct {
		dt          dtype.DType
		rows, group int
	}{{dtype.Q8, 300, 0}, {dtype.Q4, 300, 32}, {dtype.Q4, 70, 64}, {dtype.Q8, 1, 0}} {
		const cols = 1024 // 64 rows per block: 300 rows are 4 full blocks and one of 44
		ref := bf16Weight(tc.rows, cols, uint64(tc.rows))
		q, err := b.quantize(ref, false, tc.dt, tc.group)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		calls := 0
		if err := q.writeData(func(p []byte) error { calls++; got.Write(p); return nil }); err != nil {
			t.Fatal(err)
		}
		if want := (tc.rows + q.blockRows - 1) / q.blockRows; calls != want {
			t.Fatalf("%v %d rows: %d writes, want one per block (%d)", tc.dt, tc.rows, calls, want)
		}
		var data, scale, offset []byte
		if tc.dt == dtype.Q8 {
			data, scale = make([]byte, tc.rows*cols), make([]byte, 2*tc.rows)
			err = quant.QuantizeQ8From(unsafe.Slice((*int8)(unsafe.Pointer(&data[0])), len(data)), u16s(scale), ref.Data, ref.DType, tc.rows, cols)
		} else {
			g := tc.rows * cols / tc.group
			data, scale, offset = make([]byte, tc.rows*cols/2), make([]byte, 2*g), make([]byte, 2*g)
			err = quant.QuantizeQ4From(data, u16s(scale), u16s(offset), ref.Data, ref.DType, tc.rows, cols, tc.group)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), data) || !bytes.Equal(q.scale, scale) || !bytes.Equal(q.offset, offset) {
			t.Fatalf("%v %d rows: block-wise result differs from the whole-tensor one", tc.dt, tc.rows)
		}
	}
}

// TestQuantizeStreamErrors checks that a bad weight in a later block is reported with its rows,
// and that a failing writer stops the quantization and is reported itself.
func TestQuantizeStreamErrors(t *testing.T) {
	b := &builder{}
	ref := bf16Weight(300, 1024, 7)
	nan := half.F32ToBF16Scalar(float32(math.NaN()))
	binary.LittleEndian.PutUint16(ref.Data[2*(250*1024+3):], nan)
	q, err := b.quantize(ref, false, dtype.Q4, 32)
	if err != nil {
		t.Fatal(err)
	}
	err = q.writeData(func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "rows from 192") || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN in row 250: error %v, want one naming the block of rows from 192 and the NaN", err)
	}

	full := bf16Weight(300, 1024, 8)
	q, err = b.quantize(full, false, dtype.Q8, 0)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	if err := q.writeData(func([]byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing writer: error %v, want %v", err, boom)
	}
}
