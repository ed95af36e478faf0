package gguf

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"testing"
)

// golden builds expected file bytes by hand, field by field, as the GGUF specification lays
// them out.
type golden struct{ bytes.Buffer }

func (g *golden) u8(v byte)    { g.WriteByte(v) }
func (g *golden) u32(v uint32) { binary.Write(&g.Buffer, binary.LittleEndian, v) }
func (g *golden) u64(v uint64) { binary.Write(&g.Buffer, binary.LittleEndian, v) }
func (g *golden) str(s string) { g.u64(uint64(len(s))); g.WriteString(s) }
func (g *golden) zeros(n int)  { g.Write(make([]byte, n)) }

// data returns a Write that writes b.
func data(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// TestGoldenBytes writes a file with every value kind this package has and three tensors whose
// sizes are not multiples of the alignment, and compares every byte with the layout built by
// hand: header, typed metadata, tensor infos (dimensions innermost first), padding to 32, and
// each tensor's data at its aligned offset.
func TestGoldenBytes(t *testing.T) {
	f32 := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} // 3 x F32
	f16 := []byte{21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44}
	bf16 := []byte{51, 52}
	f := File{
		KVs: []KV{
			{"general.architecture", String("qwen2")},
			{"qwen2.block_count", Uint32(24)},
			{"qwen2.rope.freq_base", Float32(1e6)},
			{"tokenizer.ggml.add_bos_token", Bool(true)},
			{"tokenizer.ggml.tokens", Strings([]string{"a", "Ġb", ""})},
			{"tokenizer.ggml.token_type", Int32s([]int32{1, -3})},
		},
		Tensors: []Tensor{
			{Name: "output_norm.weight", Type: F32, Dims: []uint64{3}, Write: data(f32)},
			{Name: "blk.0.attn_q.weight", Type: F16, Dims: []uint64{3, 4}, Write: data(f16)},
			{Name: "x", Type: BF16, Dims: []uint64{1, 1, 1, 1}, Write: data(bf16)},
		},
	}
	var want golden
	want.WriteString("GGUF")
	want.u32(3)
	want.u64(3) // tensors
	want.u64(6) // metadata entries
	want.str("general.architecture")
	want.u32(8)
	want.str("qwen2")
	want.str("qwen2.block_count")
	want.u32(4)
	want.u32(24)
	want.str("qwen2.rope.freq_base")
	want.u32(6)
	want.u32(math.Float32bits(1e6))
	want.str("tokenizer.ggml.add_bos_token")
	want.u32(7)
	want.u8(1)
	want.str("tokenizer.ggml.tokens")
	want.u32(9)
	want.u32(8)
	want.u64(3)
	want.str("a")
	want.str("Ġb")
	want.str("")
	want.str("tokenizer.ggml.token_type")
	want.u32(9)
	want.u32(5)
	want.u64(2)
	want.u32(1)
	want.u32(0xFFFFFFFD)
	want.str("output_norm.weight")
	want.u32(1)
	want.u64(3)
	want.u32(0) // F32
	want.u64(0)
	want.str("blk.0.attn_q.weight")
	want.u32(2)
	want.u64(3)
	want.u64(4)
	want.u32(1) // F16
	want.u64(32)
	want.str("x")
	want.u32(4)
	for range 4 {
		want.u64(1)
	}
	want.u32(30) // BF16
	want.u64(64)
	want.zeros((32 - want.Len()%32) % 32)
	want.Write(f32)
	want.zeros(32 - len(f32))
	want.Write(f16)
	want.zeros(32 - len(f16))
	want.Write(bf16)
	want.zeros(32 - len(bf16))

	var got bytes.Buffer
	n, err := f.WriteTo(&got)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(got.Len()) {
		t.Errorf("WriteTo returned %d; wrote %d bytes", n, got.Len())
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		g, w := got.Bytes(), want.Bytes()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("file differs from the hand-built layout at byte %d (got %d bytes, want %d)", i, len(g), len(w))
	}
}

// TestAlignment checks that a non-default alignment is written as general.alignment (a u32,
// after the caller's keys) and used for the data section and every offset.
func TestAlignment(t *testing.T) {
	f := File{
		KVs:       []KV{{"general.architecture", String("llama")}},
		Tensors:   []Tensor{{Name: "a", Type: F32, Dims: []uint64{1}, Write: data([]byte{1, 2, 3, 4})}, {Name: "b", Type: F32, Dims: []uint64{1}, Write: data([]byte{5, 6, 7, 8})}},
		Alignment: 64,
	}
	var want golden
	want.WriteString("GGUF")
	want.u32(3)
	want.u64(2)
	want.u64(2)
	want.str("general.architecture")
	want.u32(8)
	want.str("llama")
	want.str("general.alignment")
	want.u32(4)
	want.u32(64)
	want.str("a")
	want.u32(1)
	want.u64(1)
	want.u32(0)
	want.u64(0)
	want.str("b")
	want.u32(1)
	want.u64(1)
	want.u32(0)
	want.u64(64)
	want.zeros((64 - want.Len()%64) % 64)
	want.Write([]byte{1, 2, 3, 4})
	want.zeros(60)
	want.Write([]byte{5, 6, 7, 8})
	want.zeros(60)
	var got bytes.Buffer
	if _, err := f.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("got %d bytes, want %d; they differ", got.Len(), want.Len())
	}
}

// TestRefused checks that a file llama.cpp could not read, or a tensor that writes the wrong
// number of bytes, is an error naming what is wrong.
func TestRefused(t *testing.T) {
	ok := func() Tensor { return Tensor{Name: "t", Type: F32, Dims: []uint64{2}, Write: data(make([]byte, 8))} }
	cases := []struct {
		name string
		file File
		want string
	}{
		{"duplicate key", File{KVs: []KV{{"k", Uint32(1)}, {"k", Uint32(2)}}}, `"k" appears twice`},
		{"empty key", File{KVs: []KV{{"", Uint32(1)}}}, "key is empty"},
		{"no value", File{KVs: []KV{{"k", Value{}}}}, `"k" has no value`},
		{"alignment key", File{KVs: []KV{{AlignmentKey, Uint32(64)}}}, "File.Alignment"},
		{"alignment", File{Alignment: 12}, "alignment 12"},
		{"duplicate tensor", File{Tensors: []Tensor{ok(), ok()}}, `"t" appears twice`},
		{"long name", File{Tensors: []Tensor{{Name: strings.Repeat("n", 64), Type: F32, Dims: []uint64{1}, Write: data(make([]byte, 4))}}}, "expected 1 to 63 bytes"},
		{"no dims", File{Tensors: []Tensor{{Name: "t", Type: F32, Write: data(nil)}}}, "0 dimensions"},
		{"zero dim", File{Tensors: []Tensor{{Name: "t", Type: F32, Dims: []uint64{2, 0}, Write: data(nil)}}}, "every one > 0"},
		{"type", File{Tensors: []Tensor{{Name: "t", Type: 2, Dims: []uint64{32}, Write: data(nil)}}}, "TensorType(2)"},
		{"no data", File{Tensors: []Tensor{{Name: "t", Type: F32, Dims: []uint64{1}}}}, `"t" has no data`},
		{"short data", File{Tensors: []Tensor{{Name: "t", Type: F16, Dims: []uint64{3}, Write: data(make([]byte, 4))}}}, `"t" wrote 4 bytes; its type and dimensions make 6`},
	}
	for _, c := range cases {
		_, err := c.file.WriteTo(io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one containing %q", c.name, err, c.want)
		}
	}
}
