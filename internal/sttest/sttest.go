// Package sttest builds safetensors files byte by byte for tests, including malformed ones
// (duplicate names, odd dtypes) that a real writer would never produce.
package sttest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Tensor is one header entry and its data.
type Tensor struct {
	Name  string
	DType string // as written in the header, e.g. "BF16"
	Shape []int
	Data  []byte
}

// Build renders a safetensors file holding tensors in the given order: an 8-byte header length,
// the JSON header padded with spaces to a multiple of 8, then the data.
func Build(tensors []Tensor) []byte {
	var hdr bytes.Buffer
	var data []byte
	hdr.WriteString(`{"__metadata__":{"format":"pt"}`)
	for _, t := range tensors {
		sh, _ := json.Marshal(t.Shape)
		fmt.Fprintf(&hdr, `,%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.Name, t.DType, sh, len(data), len(data)+len(t.Data))
		data = append(data, t.Data...)
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(hdr.Len()))
	return append(append(out, hdr.Bytes()...), data...)
}

// New returns a Tensor; it keeps call sites short.
func New(name, dtype string, shape []int, data []byte) Tensor {
	return Tensor{Name: name, DType: dtype, Shape: shape, Data: data}
}
