package dtype

import (
	"fmt"
	"strings"
)

// DType is an element type. The zero value is Invalid.
type DType uint8

// The element types anepack reads or writes.
const (
	Invalid DType = iota
	F32           // IEEE binary32
	F16           // IEEE binary16
	BF16          // bfloat16: the top half of a binary32
	I8            // int8, two's complement
	U4            // 4-bit unsigned integers, two per byte, the even element in the low nibble
	I32           // int32 (quantized checkpoints pack weights in them)
	U32           // uint32 (MLX packs 4-bit weights eight to a word)
	// Q8 is a quantized weight: I8 data [rows, cols] and an F16 scale per row (symmetric,
	// w = scale·q).
	Q8
	// Q4 is a quantized weight: U4 data [rows, cols] and an F16 scale and offset per group of
	// inputs (w = scale·(q − offset)); the group size is recorded beside it.
	Q4
	// Q4K is a quantized weight in super-blocks of 256 inputs along each row, 144 bytes each:
	// fp16 d and dmin, eight 6-bit sub-block scales and mins, 128 bytes of 4-bit codes
	// (w = d·scale·q − dmin·min; 4.5 bits per weight; package quant has the byte layout).
	Q4K
	// Q6K is a quantized weight in super-blocks of 256 inputs along each row, 210 bytes each:
	// 6-bit codes, sixteen int8 sub-block scales, fp16 d (w = d·scale·(q − 32); 6.5625 bits
	// per weight).
	Q6K
	// U8 is uint8: the raw bytes of a Q4K or Q6K weight's blob record, and of an MXFP4
	// weight's scales.
	U8
	// MXFP4 is a quantized weight in the OCP microscaling format gpt-oss checkpoints store their
	// experts in: U4 codes [rows, cols], each an FP4 E2M1 number (a sign bit and three bits of
	// magnitude: 0, 0.5, 1, 1.5, 2, 3, 4 or 6), two per byte with the even element in the low
	// nibble, and a U8 scale per row and block of MXBlock inputs, an E8M0 power of two 2^(e−127)
	// (w = fp4(q)·2^(e−127); package quant has the details).
	MXFP4
)

// MXBlock is the number of inputs that share one scale of an MXFP4 weight.
const MXBlock = 32

// SuperBlock is the number of inputs of one super-block of the Q4K and Q6K types: a row of
// such a weight is a whole number of them.
const SuperBlock = 256

// info is one row of the vocabulary.
type info struct {
	name        string // manifest spelling (and the --dtype flag's)
	safetensors string // safetensors header spelling; "" when safetensors has none
	mil         string // MIL spelling
	blob        uint32 // Core ML blob-format code (MILBlob BlobDataType); 0 when none
	bits        int    // storage bits per element (of the codes, for a quantized type)
	block       int    // bytes per SuperBlock elements of a super-block type; 0 for the others
}

var table = [...]info{
	F32:   {name: "f32", safetensors: "F32", mil: "fp32", blob: 2, bits: 32},
	F16:   {name: "f16", safetensors: "F16", mil: "fp16", blob: 1, bits: 16},
	BF16:  {name: "bf16", safetensors: "BF16", mil: "bf16", blob: 5, bits: 16},
	I8:    {name: "i8", safetensors: "I8", mil: "int8", blob: 4, bits: 8},
	U4:    {name: "u4", mil: "uint4", blob: 11, bits: 4},
	I32:   {name: "i32", safetensors: "I32", mil: "int32", blob: 14, bits: 32},
	U32:   {name: "u32", safetensors: "U32", mil: "uint32", blob: 15, bits: 32},
	Q8:    {name: "q8", bits: 8},
	Q4:    {name: "q4", bits: 4},
	Q4K:   {name: "q4k", bits: 4, block: 144},
	Q6K:   {name: "q6k", bits: 6, block: 210},
	U8:    {name: "u8", safetensors: "U8", mil: "uint8", blob: 3, bits: 8},
	MXFP4: {name: "mxfp4", bits: 4},
}

func (d DType) row() (info, bool) {
	if d == Invalid || int(d) >= len(table) {
		return info{}, false
	}
	return table[d], true
}

// Valid reports whether d is one of the types above.
func (d DType) Valid() bool {
	_, ok := d.row()
	return ok
}

// String returns the manifest spelling, e.g. "f16".
func (d DType) String() string {
	if r, ok := d.row(); ok {
		return r.name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Safetensors returns the safetensors header spelling, e.g. "BF16", or "" when there is none.
func (d DType) Safetensors() string {
	r, _ := d.row()
	return r.safetensors
}

// MIL returns the MIL spelling, e.g. "fp16" ("" for the quantized weight types, which MIL
// spells as their data's type plus constexpr ops).
func (d DType) MIL() string {
	r, _ := d.row()
	return r.mil
}

// BlobCode returns the type's code in Core ML's weight-blob format (1 fp16, 2 fp32, 4 int8,
// 3 uint8, 5 bf16, 11 uint4), or 0 when the format has none.
func (d DType) BlobCode() uint32 {
	r, _ := d.row()
	return r.blob
}

// Bits returns the storage size of one element in bits (0 for Invalid); for a quantized type,
// the bits of one code, without its share of the scales.
func (d DType) Bits() int {
	r, _ := d.row()
	return r.bits
}

// Size returns the storage size of one element in bytes, or 0 for sub-byte and super-block
// types.
func (d DType) Size() int {
	if d.SuperBlocks() {
		return 0
	}
	return d.Bits() / 8
}

// Bytes returns the storage size of n elements, sub-byte types rounded up to whole bytes and
// super-block types to whole super-blocks (a row of them holds a whole number).
func (d DType) Bytes(n int64) int64 {
	if r, ok := d.row(); ok && r.block > 0 {
		return (n + SuperBlock - 1) / SuperBlock * int64(r.block)
	}
	return (n*int64(d.Bits()) + 7) / 8
}

// BlockBytes returns the bytes of one super-block of a super-block type (144 for Q4K, 210 for
// Q6K), 0 for the others.
func (d DType) BlockBytes() int {
	r, _ := d.row()
	return r.block
}

// SuperBlocks reports whether d stores each row as super-blocks of SuperBlock inputs, codes and
// scales interleaved (Q4K, Q6K), rather than as planar codes with separate scale records.
func (d DType) SuperBlocks() bool { return d.BlockBytes() > 0 }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// Quantized reports whether d is a quantized weight type: codes plus scales, planar (Q8, Q4,
// MXFP4: the scales are records of their own) or in super-blocks (Q4K, Q6K).
func (d DType) Quantized() bool { return d == Q8 || d == Q4 || d == MXFP4 || d.SuperBlocks() }

// Data returns the element type of a quantized weight's data record (I8 for Q8, U4 for Q4 and
// MXFP4, U8 for the super-block types), else d.
func (d DType) Data() DType {
	switch d {
	case Q8:
		return I8
	case Q4, MXFP4:
		return U4
	case Q4K, Q6K:
		return U8
	}
	return d
}

// Parse reads a manifest spelling ("f16"). For the bundles written before this vocabulary
// existed it also accepts the MIL spellings ("fp16", "fp32") that their program I/O used.
func Parse(s string) (DType, error) {
	for d, r := range table {
		if r.name != "" && (s == r.name || (r.mil != "" && s == r.mil)) {
			return DType(d), nil
		}
	}
	return Invalid, fmt.Errorf("unknown element type %q; expected one of %s", s, strings.Join(Names(), ", "))
}

// FromSafetensors reads a safetensors header spelling ("BF16").
func FromSafetensors(s string) (DType, bool) {
	for d, r := range table {
		if r.safetensors != "" && s == r.safetensors {
			return DType(d), true
		}
	}
	return Invalid, false
}

// FromBlobCode reads a weight-blob code.
func FromBlobCode(code uint32) (DType, bool) {
	for d, r := range table {
		if r.blob != 0 && code == r.blob {
			return DType(d), true
		}
	}
	return Invalid, false
}

// Names lists the manifest spellings of every type, in table order.
func Names() []string {
	var out []string
	for _, r := range table {
		if r.name != "" {
			out = append(out, r.name)
		}
	}
	return out
}

// MarshalText writes the manifest spelling, so a DType field is a JSON string.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("dtype: cannot encode invalid type %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads a manifest spelling (see Parse).
func (d *DType) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
