package dtype

import (
	"encoding/json"
	"testing"
)

func TestSpellings(t *testing.T) {
	for _, tc := range []struct {
		d                 DType
		name, st, mil     string
		blob, bits, bytes int
	}{
		{F32, "f32", "F32", "fp32", 2, 32, 4},
		{F16, "f16", "F16", "fp16", 1, 16, 2},
		{BF16, "bf16", "BF16", "bf16", 5, 16, 2},
		{I8, "i8", "I8", "int8", 4, 8, 1},
		{U4, "u4", "", "uint4", 11, 4, 0},
	} {
		if tc.d.String() != tc.name || tc.d.Safetensors() != tc.st || tc.d.MIL() != tc.mil ||
			int(tc.d.BlobCode()) != tc.blob || tc.d.Bits() != tc.bits || tc.d.Size() != tc.bytes {
			t.Errorf("%v: got %q %q %q %d %d %d", tc.d, tc.d.String(), tc.d.Safetensors(), tc.d.MIL(), tc.d.BlobCode(), tc.d.Bits(), tc.d.Size())
		}
		if p, err := Parse(tc.name); err != nil || p != tc.d {
			t.Errorf("Parse(%q) = %v, %v", tc.name, p, err)
		}
		if p, err := Parse(tc.mil); err != nil || p != tc.d {
			t.Errorf("Parse(%q) = %v, %v", tc.mil, p, err)
		}
		if b, ok := FromBlobCode(uint32(tc.blob)); !ok || b != tc.d {
			t.Errorf("FromBlobCode(%d) = %v", tc.blob, b)
		}
		if tc.st != "" {
			if s, ok := FromSafetensors(tc.st); !ok || s != tc.d {
				t.Errorf("FromSafetensors(%q) = %v", tc.st, s)
			}
		}
	}
	if U4.Bytes(7) != 4 || F16.Bytes(3) != 6 {
		t.Errorf("Bytes: u4 of 7 = %d, f16 of 3 = %d", U4.Bytes(7), F16.Bytes(3))
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Parse("q9"); err == nil {
		t.Error("Parse accepted q9")
	}
	if _, ok := FromSafetensors("F64"); ok {
		t.Error("FromSafetensors accepted F64, which anepack does not read")
	}
	if _, ok := FromBlobCode(99); ok {
		t.Error("FromBlobCode accepted 99")
	}
	if Invalid.Valid() || DType(200).Valid() || DType(200).String() != "dtype(200)" {
		t.Error("invalid types must say so")
	}
	if _, err := json.Marshal(Invalid); err == nil {
		t.Error("marshalled an invalid type")
	}
}

func TestJSON(t *testing.T) {
	var v struct{ D DType }
	if err := json.Unmarshal([]byte(`{"D":"fp16"}`), &v); err != nil || v.D != F16 {
		t.Fatalf("legacy spelling: %v %v", v.D, err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"D":"f16"}` {
		t.Fatalf("%s %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"D":"int3"}`), &v); err == nil {
		t.Error("accepted int3")
	}
}

func TestQuantizedTypes(t *testing.T) {
	if d, err := Parse("q4"); err != nil || d != Q4 || !d.Quantized() || d.Data() != U4 || d.Bits() != 4 {
		t.Errorf("q4: %v %v", d, err)
	}
	if Q8.Data() != I8 || F16.Data() != F16 || F16.Quantized() || Q8.MIL() != "" || Q8.BlobCode() != 0 {
		t.Error("Q8/F16 properties")
	}
	if _, err := Parse(""); err == nil {
		t.Error("the empty string parsed as a type")
	}
}

func TestSuperBlockTypes(t *testing.T) {
	for _, tc := range []struct {
		d     DType
		name  string
		block int
		bits  int
	}{{Q4K, "q4k", 144, 4}, {Q6K, "q6k", 210, 6}} {
		if p, err := Parse(tc.name); err != nil || p != tc.d {
			t.Errorf("Parse(%q) = %v, %v", tc.name, p, err)
		}
		if !tc.d.SuperBlocks() || !tc.d.Quantized() || tc.d.Data() != U8 || tc.d.BlockBytes() != tc.block || tc.d.Bits() != tc.bits || tc.d.Size() != 0 {
			t.Errorf("%v: properties %v %v %v %d %d %d", tc.d, tc.d.SuperBlocks(), tc.d.Quantized(), tc.d.Data(), tc.d.BlockBytes(), tc.d.Bits(), tc.d.Size())
		}
		if got := tc.d.Bytes(3 * SuperBlock); got != int64(3*tc.block) {
			t.Errorf("%v: Bytes(768) = %d, want %d", tc.d, got, 3*tc.block)
		}
		if tc.d.MIL() != "" || tc.d.BlobCode() != 0 {
			t.Errorf("%v has a MIL spelling or blob code: no MIL op reads it", tc.d)
		}
	}
	if Q4.SuperBlocks() || Q8.BlockBytes() != 0 || U8.BlobCode() != 3 || U8.MIL() != "uint8" || U8.Size() != 1 {
		t.Error("planar types and u8")
	}
}

// TestMXFP4: planar 4-bit codes (the bytes of a checkpoint's _blocks tensor) with a scale record
// of their own; no MIL op reads it.
func TestMXFP4(t *testing.T) {
	d, err := Parse("mxfp4")
	if err != nil || d != MXFP4 || !d.Quantized() || d.SuperBlocks() || d.Data() != U4 || d.Bits() != 4 || d.Size() != 0 {
		t.Fatalf("mxfp4: %v %v", d, err)
	}
	if u, ok := FromSafetensors("U8"); !ok || u != U8 {
		t.Errorf("FromSafetensors(U8) = %v, %v: MXFP4 checkpoints store codes and scales as U8", u, ok)
	}
	if d.Bytes(2*MXBlock) != MXBlock || d.MIL() != "" || d.BlobCode() != 0 || d.Safetensors() != "" {
		t.Errorf("mxfp4: Bytes(64) = %d, MIL %q, blob %d", d.Bytes(2*MXBlock), d.MIL(), d.BlobCode())
	}
}
