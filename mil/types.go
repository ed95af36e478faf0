package mil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anepack/anepack/blobfile"
)

// DType is a MIL element type.
type DType uint8

// The element types the parser knows. Only FP16 and FP32 flow through a running program; the
// integer types appear in constants (shapes, axes, quantized weights), String and Bool in
// op parameters.
const (
	InvalidDType DType = iota
	FP16
	FP32
	FP64
	BF16
	Int4
	Int8
	Int16
	Int32
	Int64
	UInt1
	UInt2
	UInt3
	UInt4
	UInt6
	UInt8
	UInt16
	UInt32
	UInt64
	Bool
	String
)

var dtypeNames = map[string]DType{
	"fp16": FP16, "fp32": FP32, "fp64": FP64, "bf16": BF16,
	"int4": Int4, "int8": Int8, "int16": Int16, "int32": Int32, "int64": Int64,
	"uint1": UInt1, "uint2": UInt2, "uint3": UInt3, "uint4": UInt4, "uint6": UInt6,
	"uint8": UInt8, "uint16": UInt16, "uint32": UInt32, "uint64": UInt64,
	"bool": Bool, "string": String,
}

var dtypeSpelling = [...]string{
	FP16: "fp16", FP32: "fp32", FP64: "fp64", BF16: "bf16",
	Int4: "int4", Int8: "int8", Int16: "int16", Int32: "int32", Int64: "int64",
	UInt1: "uint1", UInt2: "uint2", UInt3: "uint3", UInt4: "uint4", UInt6: "uint6",
	UInt8: "uint8", UInt16: "uint16", UInt32: "uint32", UInt64: "uint64",
	Bool: "bool", String: "string",
}

// String returns the MIL spelling, e.g. "fp16".
func (d DType) String() string {
	if int(d) < len(dtypeSpelling) && dtypeSpelling[d] != "" {
		return dtypeSpelling[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == FP16 || d == FP32 || d == FP64 || d == BF16 }

// IsInt reports whether d is a (signed or unsigned) integer type.
func (d DType) IsInt() bool { return d >= Int4 && d <= UInt64 }

// Bits returns the storage width of one element in a weight blob, 0 for String.
func (d DType) Bits() int {
	switch d {
	case UInt1:
		return 1
	case UInt2:
		return 2
	case UInt3:
		return 3
	case Int4, UInt4:
		return 4
	case UInt6:
		return 6
	case Int8, UInt8, Bool:
		return 8
	case FP16, BF16, Int16, UInt16:
		return 16
	case FP32, Int32, UInt32:
		return 32
	case FP64, Int64, UInt64:
		return 64
	}
	return 0
}

// Blob dtype codes missing from package blobfile's named constants (coremltools BlobDataType).
const (
	blobUInt1 blobfile.DType = 9
	blobUInt2 blobfile.DType = 10
	blobUInt3 blobfile.DType = 12
	blobUInt6 blobfile.DType = 13
)

// blobCode returns the weight-blob dtype code for d, or false when blobs cannot hold d.
func (d DType) blobCode() (blobfile.DType, bool) {
	switch d {
	case FP16:
		return blobfile.FP16, true
	case FP32:
		return blobfile.FP32, true
	case UInt8:
		return blobfile.UInt8, true
	case Int8:
		return blobfile.Int8, true
	case BF16:
		return blobfile.BF16, true
	case Int16:
		return blobfile.Int16, true
	case UInt16:
		return blobfile.UInt16, true
	case Int4:
		return blobfile.Int4, true
	case UInt1:
		return blobUInt1, true
	case UInt2:
		return blobUInt2, true
	case UInt4:
		return blobfile.UInt4, true
	case UInt3:
		return blobUInt3, true
	case UInt6:
		return blobUInt6, true
	case Int32:
		return blobfile.Int32, true
	case UInt32:
		return blobfile.UInt32, true
	}
	return 0, false
}

// TypeKind separates tensors (scalars are rank-0 tensors) from the dict type of buildInfo.
type TypeKind uint8

// Type kinds.
const (
	KindTensor TypeKind = iota
	KindDict
)

// Type is a MIL value type. A scalar such as `int32` and the old spelling
// `tensor<int32, []>` are the same type: a rank-0 tensor.
type Type struct {
	Kind      TypeKind
	DType     DType
	Shape     []int
	Key, Elem *Type // dict only
}

// TensorType returns the tensor type of the given dtype and shape.
func TensorType(dt DType, shape ...int) Type { return Type{Kind: KindTensor, DType: dt, Shape: shape} }

// Rank returns the number of dimensions (0 for scalars).
func (t Type) Rank() int { return len(t.Shape) }

// Elements returns the number of elements (1 for scalars).
func (t Type) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.DType != u.DType || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	if t.Kind == KindDict {
		return t.Key.Equal(*u.Key) && t.Elem.Equal(*u.Elem)
	}
	return true
}

// String spells t as the modern MIL syntax does: `fp16` for scalars,
// `tensor<fp16, [1, 64, 1, 32]>` for tensors.
func (t Type) String() string {
	if t.Kind == KindDict {
		return "dict<" + t.Key.String() + ", " + t.Elem.String() + ">"
	}
	if len(t.Shape) == 0 {
		return t.DType.String()
	}
	return "tensor<" + t.DType.String() + ", " + shapeString(t.Shape) + ">"
}

func shapeString(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}
