package mil

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
)

// TestSplitBlobsRewrite checks the rewrite on a program with three records in one file (one
// named twice, in both spellings of the old and new syntax) and a file that already holds one
// record: the new text differs only in the rewritten paths and offsets, each new file is a
// header, the record's metadata with the payload offset 128 and the payload, and the
// one-record file is passed through without a copy.
func TestSplitBlobsRewrite(t *testing.T) {
	a, b, c := []byte{1, 2, 3, 4}, bytes.Repeat([]byte{5}, 70), []byte{6, 7}
	packed := writeBlob(t, []blobfile.DType{blobfile.FP16, blobfile.Int4, blobfile.UInt8}, a, b, c)
	single := writeBlob(t, []blobfile.DType{blobfile.FP16}, []byte{9, 9})
	recs, _ := blobfile.Layout([]blobfile.Entry{{DType: blobfile.FP16, Size: 4}, {DType: blobfile.Int4, Size: 70}, {DType: blobfile.UInt8, Size: 2}})
	text := `w1 = BLOBFILE(path = string("@model_path/weights/mlp.bin"), offset = uint64(64))
w2 = BLOBFILE(path = tensor<string, []>("@model_path/weights/mlp.bin"), offset = tensor<uint64, []>(0xc0))
w3 = BLOBFILE(offset = uint64(384), path = string("@model_path/weights/mlp.bin"))
w4 = BLOBFILE(path = string("@model_path/weights/mlp.bin"), offset = uint64(192)) // again
b1 = BLOBFILE(path = string("@model_path/weights/bias.bin"), offset = uint64(64))
`
	if recs[1].Offset != 0xc0 || recs[2].Offset != 384 {
		t.Fatalf("fixture offsets %v", recs)
	}
	weights := map[string][]byte{"@model_path/weights/mlp.bin": packed, "@model_path/weights/bias.bin": single}
	gotText, got, err := SplitBlobs([]byte(text), weights)
	if err != nil {
		t.Fatal(err)
	}
	want := `w1 = BLOBFILE(path = string("@model_path/weights/mlp.r0.bin"), offset = uint64(64))
w2 = BLOBFILE(path = tensor<string, []>("@model_path/weights/mlp.r1.bin"), offset = tensor<uint64, []>(64))
w3 = BLOBFILE(offset = uint64(64), path = string("@model_path/weights/mlp.r2.bin"))
w4 = BLOBFILE(path = string("@model_path/weights/mlp.r1.bin"), offset = uint64(64)) // again
b1 = BLOBFILE(path = string("@model_path/weights/bias.bin"), offset = uint64(64))
`
	if string(gotText) != want {
		t.Errorf("rewritten text: %s", firstDiff(string(gotText), want))
	}
	if len(got) != 4 {
		t.Errorf("%d files; want 3 split records and the one-record file", len(got))
	}
	for k, payload := range [][]byte{a, b, c} {
		name := "@model_path/weights/mlp.r" + string(rune('0'+k)) + ".bin"
		f, err := blobfile.Parse(got[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := f.RecordAt(64)
		if err != nil || f.Count != 1 || r.DType != recs[k].DType || !bytes.Equal(f.Payload(r), payload) || len(got[name])%64 != 0 {
			t.Errorf("%s: count %d, record %+v (%v), payload %v; want %s %v", name, f.Count, r, err, f.Payload(r), recs[k].DType, payload)
		}
		if meta := got[name][64:128]; binary.LittleEndian.Uint64(meta[16:]) != 128 || !bytes.Equal(meta[24:], packed[recs[k].Offset+24:recs[k].Offset+64]) {
			t.Errorf("%s: metadata %x", name, meta)
		}
	}
	if b := got["@model_path/weights/bias.bin"]; len(b) == 0 || &b[0] != &single[0] {
		t.Error("the one-record file was copied or dropped")
	}

	for name, c := range map[string]struct {
		text string
		msg  string
	}{
		"payload offset": {`BLOBFILE(path = string("@model_path/weights/mlp.bin"), offset = uint64(128))`, "0xDEADBEEF"},
		"missing path":   {`BLOBFILE(path = string("@model_path/weights/x.bin"), offset = uint64(64))`, "not in the weights"},
		"past the end":   {`BLOBFILE(path = string("@model_path/weights/mlp.bin"), offset = uint64(99999999))`, "past its end"},
	} {
		if _, _, err := SplitBlobs([]byte(c.text), weights); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want an error mentioning %q", name, err, c.msg)
		}
	}
	clash := map[string][]byte{"@model_path/weights/mlp.bin": packed, "@model_path/weights/bias.bin": single, "@model_path/weights/mlp.r1.bin": single}
	if _, _, err := SplitBlobs([]byte(text), clash); err == nil || !strings.Contains(err.Error(), "already a weight file") {
		t.Errorf("name clash: %v", err)
	}
}

// TestSplitBlobsSameResult runs the generated QKV (four records: q, k, v, bias), O and FFN
// (three records) programs and the iOS16/iOS18 quantized programs in the sim in both layouts:
// the outputs must be bit-identical, and the split text must name only offset 64.
func TestSplitBlobsSameResult(t *testing.T) {
	for _, name := range []string{"gen_attn_qkv_s32.mil", "gen_attn_o_s32.mil", "gen_mlp_s32.mil", "gen_lm_head_1_s32.mil",
		"sim_affine_ios16.mil", "sim_blockwise_ios18.mil", "sim_lut_ios16.mil"} {
		text := readTestdata(t, name)
		p, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		r := newRand(21)
		weights := synthWeightsWith(p, func(payload []byte, ty Type) {
			switch ty.DType {
			case FP16:
				copy(payload, f16Bytes(randF16(r, len(payload)/2, 0.2)))
			case FP32:
				f := make([]float32, len(payload)/4)
				for i := range f {
					f[i] = float32(r.Float64() - 0.5)
				}
				copy(payload, f32Bytes(f))
			default:
				for i := range payload {
					payload[i] = byte(r.IntN(256))
				}
			}
		})
		splitText, splitWeights, err := SplitBlobs(text, weights)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		refs, err := blobRefs(splitText)
		if err != nil || len(refs) == 0 {
			t.Fatalf("%s: split text has %d references (%v)", name, len(refs), err)
		}
		for _, ref := range refs {
			if ref.ref.Offset != 64 {
				t.Errorf("%s: split text names %v", name, ref.ref)
			}
		}
		packedExe := compileText(t, text, weights)
		splitExe := compileText(t, splitText, splitWeights)
		in := packedExe.Inputs()[0].Type
		x := make([]float32, in.Elements())
		for i := range x {
			x[i] = float32(r.Float64()*2 - 1)
		}
		outN := packedExe.Outputs()[0].Type.Elements()
		y1, y2 := make([]float32, outN), make([]float32, outN)
		if err := packedExe.EvalFloat([][]float32{x}, [][]float32{y1}); err != nil {
			t.Fatal(err)
		}
		if err := splitExe.EvalFloat([][]float32{x}, [][]float32{y2}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(y1, y2) {
			t.Errorf("%s: packed and split layouts give different outputs", name)
		}
		if slices.Equal(y1, make([]float32, outN)) {
			t.Errorf("%s: all-zero output proves nothing", name)
		}
	}
}
