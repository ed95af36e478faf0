package milgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
)

func sectionName(b blobplan.Blob) string { return "blob/" + b.Key.String() }

func smallPrograms(t *testing.T, opts Options) (*arch.Config, []blobplan.Blob, []Program) {
	t.Helper()
	cfg := parseConfig(t, smallConfigJSON)
	specs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	progs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, specs, progs
}

func findProgram(t *testing.T, progs []Program, name string) Program {
	t.Helper()
	for _, k := range progs {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no program %s", name)
	return Program{}
}

// TestGoldenMIL compares generated programs with hand-written files in testdata. The files
// were derived from docs/ane.md's "Program text" (header, statement syntax, conv constants in MDX's
// order and spelling, BLOBFILE offsets pointing at records: 64, then 64 + Σ(64 + padded
// payload)), not from this generator's output.
func TestGoldenMIL(t *testing.T) {
	_, _, progs := smallPrograms(t, Options{Blobs: blobplan.Options{MaxLMHeadRows: 128}})
	for _, c := range []struct {
		programs []Program
		name     string
		file     string
	}{
		{progs, "layers.0.attn_o.s32", "gen_attn_o_s32.mil"},
		{progs, "layers.1.attn_qkv.s32", "gen_attn_qkv_s32.mil"},
		{progs, "layers.0.mlp.s32", "gen_mlp_s32.mil"},
		{progs, "lm_head.1.s32", "gen_lm_head_1_s32.mil"},
	} {
		got := findProgram(t, c.programs, c.name).Text
		want := string(readTestdata(t, c.file))
		if got != want {
			t.Errorf("%s differs from mil/testdata/%s at %s", c.name, c.file, firstDiff(got, want))
		}
	}
}

// TestGeneratedDeterministic checks that generating twice gives identical text.
func TestGeneratedDeterministic(t *testing.T) {
	_, _, a := smallPrograms(t, Options{})
	_, _, b := smallPrograms(t, Options{})
	for i := range a {
		if a[i].Text != b[i].Text || a[i].Name != b[i].Name {
			t.Fatalf("program %d differs between runs", i)
		}
	}
}

// TestNoFP32Programs checks that f32 weights are laid out for the CPU but never sent to the ANE:
// no runtime has shown the ANE a cast of fp32 weights, and M1/M2 refuse cast.
func TestNoFP32Programs(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	opts := Options{Blobs: blobplan.Options{WeightDType: dtype.F32}}
	specs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	if specs[0].Records[0].DType != dtype.F32 || specs[0].Records[0].Size() != 64*96*4 {
		t.Errorf("f32 record %+v", specs[0].Records[0])
	}
	if _, err := Programs(cfg, opts, blobplan.Place(specs, sectionName)); err == nil || !strings.Contains(err.Error(), "for the CPU") {
		t.Errorf("Programs with f32 weights: %v", err)
	}
}

// TestProgramsList checks the program list: every layer × group × bucket, the LM head chunks
// at S = 32 only, names unique, Decode exactly at S = 32, shapes and weight bindings.
func TestProgramsList(t *testing.T) {
	_, specs, progs := smallPrograms(t, Options{Seqs: []int{64, 128}, Blobs: blobplan.Options{MaxLMHeadRows: 128}})
	// Buckets become 32 (decode, always), 64, 128; 2 layers × 3 groups × 3 + 2 chunks × 1.
	if len(progs) != 2*3*3+2 {
		t.Fatalf("%d programs; want 20", len(progs))
	}
	seen := map[string]bool{}
	for _, k := range progs {
		if seen[k.Name] {
			t.Errorf("duplicate program name %s", k.Name)
		}
		seen[k.Name] = true
		if k.Decode != (k.Seq == 32) {
			t.Errorf("%s: Decode = %v at S = %d", k.Name, k.Decode, k.Seq)
		}
		if len(k.Weights) != 1 || k.Weights[0].Path != "@model_path/weights/"+k.Kind+".bin" {
			t.Errorf("%s: weights %+v", k.Name, k.Weights)
		}
		if !strings.Contains(k.Text, k.Weights[0].Path) {
			t.Errorf("%s: MIL does not name %s", k.Name, k.Weights[0].Path)
		}
		in, out := k.Inputs[0].Shape, k.Outputs[0].Shape
		if in[3] != k.Seq || out[3] != k.Seq || in[0] != 1 || in[2] != 1 || k.Inputs[0].Name != "x" || k.Outputs[0].Name != "y" {
			t.Errorf("%s: I/O %v -> %v", k.Name, in, out)
		}
		wantIn, wantOut := map[string][2]int{
			arch.GroupQKV: {96, 128}, arch.GroupO: {64, 96}, arch.GroupMLP: {96, 96},
		}[k.Kind][0], map[string][2]int{arch.GroupQKV: {96, 128}, arch.GroupO: {64, 96}, arch.GroupMLP: {96, 96}}[k.Kind][1]
		if k.Kind == arch.GroupLMHead {
			wantIn, wantOut = 96, []int{128, 72}[k.Chunk]
			if k.Seq != 32 || k.Layer != -1 {
				t.Errorf("%s: LM head program at S = %d, layer %d", k.Name, k.Seq, k.Layer)
			}
		}
		if in[1] != wantIn || out[1] != wantOut {
			t.Errorf("%s: channels %d -> %d; want %d -> %d", k.Name, in[1], out[1], wantIn, wantOut)
		}
	}
	if !seen["layers.1.mlp.s128"] || !seen["lm_head.0.s32"] || !seen["layers.0.attn_qkv.s32"] {
		t.Errorf("missing expected names; have %v", seen)
	}
	if len(specs) != 2*3+2 {
		t.Errorf("%d blob specs; want 8", len(specs))
	}
}

func TestOptionsRefused(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	for _, o := range []Options{{Seqs: []int{48}}, {Seqs: []int{0}}, {LMHeadSeqs: []int{16}}, {Blobs: blobplan.Options{WeightDType: dtype.BF16}},
		{Blobs: blobplan.Options{MaxLMHeadRows: 70000}}, {Blobs: blobplan.Options{MaxLMHeadRows: 32}}} {
		if o.Check() == nil {
			t.Errorf("options %+v: Check accepts them", o)
		}
		if _, err := Programs(cfg, o, nil); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// TestPlacementChecked refuses placements that disagree with the record specs.
func TestPlacementChecked(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	specs, _ := blobplan.Blobs(cfg, blobplan.Options{})
	key := blobplan.Key{Group: arch.GroupMLP, Layer: 1}
	for name, mutate := range map[string]func(p *blobplan.Placement){
		"missing": nil,
		"count":   func(p *blobplan.Placement) { p.Records = p.Records[:2] },
		"dtype":   func(p *blobplan.Placement) { p.Records[1].DType = blobfile.FP32 },
		"size":    func(p *blobplan.Placement) { p.Records[2].Size-- },
		"offset":  func(p *blobplan.Placement) { p.Records[0].Offset = 32 },
	} {
		placed := blobplan.Place(specs, sectionName)
		if mutate == nil {
			delete(placed, key)
		} else {
			p := placed[key]
			p.Records = append([]blobfile.Record(nil), p.Records...)
			mutate(&p)
			placed[key] = p
		}
		if _, err := Programs(cfg, Options{}, placed); err == nil {
			t.Errorf("%s: bad placement accepted", name)
		}
	}
}

// TestProjectionBlobBytes writes the attn_o blob of the golden projection (in 64, out 96)
// with blobfile.Writer from the record specs and checks its bytes against the layout derived
// by hand from docs/ane.md's "Weight blobs": 64-byte header (count 1, version 2), record at 64 (EF BE AD DE,
// dtype 1, size 96·64·2 = 12288, payload offset 128), payload at 128, file 128 + 12288 bytes
// (already a multiple of 64). Then the golden MIL runs on it in the sim.
func TestProjectionBlobBytes(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	recs, err := blobplan.GroupRecords(cfg, arch.GroupO, 0, dtype.F16)
	if err != nil {
		t.Fatal(err)
	}
	spec := blobplan.Blob{Records: recs}
	r := newRand(1)
	w := randF16(r, 96*64, 0.25)
	var buf bytes.Buffer
	bw, err := blobfile.NewWriter(&buf, spec.Entries())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := bw.Write(f16Bytes(w)); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) != 12416 {
		t.Fatalf("blob is %d bytes; want 12416", len(b))
	}
	want := []struct {
		off  int
		size int
		v    uint64
	}{{0, 4, 1}, {4, 4, 2}, {64, 4, 0xDEADBEEF}, {68, 4, 1}, {72, 8, 12288}, {80, 8, 128}, {88, 8, 0}}
	for _, f := range want {
		var got uint64
		if f.size == 4 {
			got = uint64(binary.LittleEndian.Uint32(b[f.off:]))
		} else {
			got = binary.LittleEndian.Uint64(b[f.off:])
		}
		if got != f.v {
			t.Errorf("bytes %d..%d = %#x; want %#x", f.off, f.off+f.size, got, f.v)
		}
	}
	if !bytes.Equal(b[64:68], []byte{0xEF, 0xBE, 0xAD, 0xDE}) || !bytes.Equal(b[128:], f16Bytes(w)) {
		t.Error("sentinel or payload bytes differ")
	}
	for i := 8; i < 64; i++ {
		if b[i] != 0 || b[96+i-8] != 0 && i < 40 {
			t.Fatalf("reserved byte not zero near %d", i)
		}
	}

	e := compileText(t, readTestdata(t, "gen_attn_o_s32.mil"), map[string][]byte{"@model_path/weights/attn_o.bin": b})
	x := randF16(r, 64*32, 1)
	y := make([]uint16, 96*32)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	wf, xf := f64s(w), f64s(x)
	for o := 0; o < 96; o++ {
		for s := 0; s < 32; s++ {
			var ref, mag float64
			for i := 0; i < 64; i++ {
				ref += wf[o*64+i] * xf[i*32+s]
				mag += abs(wf[o*64+i] * xf[i*32+s])
			}
			// One rounding of the result to fp16 (half an ulp) plus float32 accumulation.
			if got := float64(half.F16ToF32Scalar(y[o*32+s])); abs(got-ref) > ulp16(ref)/2+mag*1e-6 {
				t.Fatalf("y[%d,%d] = %g; float64 reference %g", o, s, got, ref)
			}
		}
	}
	if _, err := Programs(cfg, Options{}, map[blobplan.Key]blobplan.Placement{}); err == nil || errors.Is(err, mil.ErrANE) {
		t.Errorf("empty placement: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
