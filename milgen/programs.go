package milgen

import (
	"fmt"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
)

// DefaultSeqs are the default prefill buckets.
var DefaultSeqs = []int{32, 64, 128, 256, 512}

// Options chooses which programs Programs generates.
type Options struct {
	// Blobs is the layout of the weights the programs read (blobplan.Blobs). Programs are
	// generated for F16 and the quantized types (read through MIL constexpr ops) only, since
	// the ANE computes in fp16 and no runtime has shown it a cast of fp32 weights (M1 and M2
	// refuse cast): an f32 bundle is a CPU bundle.
	Blobs blobplan.Options
	// Seqs are the prefill buckets (spatial sizes S, multiples of 32); nil means DefaultSeqs.
	// The S = 32 program also serves decode and is always generated.
	Seqs []int
	// LMHeadSeqs are the spatial sizes of the LM-head programs; nil means [32]. Generation
	// only needs logits of the last position, and a run of positions can be fed 32 at a time,
	// so one size saves compiles (the ANE allows about 119 per process, docs/ane.md).
	LMHeadSeqs []int
}

// Check reports the first option out of range, as Programs would. Pack checks the options of
// bundles it packs without programs too, so that a bad bucket is refused either way.
func (o Options) Check() error {
	_, err := o.normalize()
	return err
}

func (o Options) normalize() (Options, error) {
	var err error
	if o.Blobs, err = o.Blobs.Normalize(); err != nil {
		return o, err
	}
	if o.Seqs == nil {
		o.Seqs = DefaultSeqs
	}
	if o.LMHeadSeqs == nil {
		o.LMHeadSeqs = []int{format.DecodeSeq}
	}
	if o.Seqs, err = normSeqs("Seqs", o.Seqs); err != nil {
		return o, err
	}
	if o.LMHeadSeqs, err = normSeqs("LMHeadSeqs", o.LMHeadSeqs); err != nil {
		return o, err
	}
	return o, nil
}

// normSeqs checks the buckets, adds the decode size and sorts them.
func normSeqs(field string, seqs []int) ([]int, error) {
	out := []int{format.DecodeSeq}
	for _, s := range seqs {
		if s <= 0 || s%32 != 0 || s > blobplan.MaxANEDim {
			return nil, fmt.Errorf("milgen: Options.%s: %d is not a positive multiple of 32 up to %d (fp16 rows are padded to 32 elements, docs/ane.md)", field, s, blobplan.MaxANEDim)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Program is one generated ANE program: its record as a bundle manifest stores it, and its
// text. The record names the program ("layers.0.attn_qkv.s64", "lm_head.1.s32"),
// its group (arch.Family.Groups, or arch.GroupLMHead), layer (-1 for the LM head), LM-head
// chunk and bucket S, binds each BLOBFILE path of the text to the bundle section holding the
// file, and lists the one input x and one output y, f16 [1, C, 1, S]. Programs leaves the
// record's MIL, MILOffset and MILSize empty: they say where the writer of the bundle stores Text.
type Program struct {
	format.Program
	Text string
}

// placedRecord is a record spec with the path and offset the MIL names it by.
type placedRecord struct {
	spec   blobplan.RecordSpec
	path   string
	offset int64
}

// Programs generates every program of a model: for each layer and each bucket the family's
// group programs, then the LM-head chunks for each LMHeadSeqs size. placed says where pack
// wrote each blob listed by blobplan.Blobs (see blobplan.Place); every record is checked
// against its spec.
//
// Each program has one input x [1, Cin, 1, S] and one output y [1, Cout, 1, S], fp16:
//
//	attn_qkv: x = normed hidden [H], y = q | k | v (+ bias) [Cq + 2·Ckv], channel c of q is
//	          head c / head_dim, dimension c % head_dim (the rows of q_proj), likewise k and v
//	          (with an output gate, q_proj's rows interleave each head's query and gate)
//	attn_o:   x = attention output [Cq], y = [H] (+ bias)
//	linear_attn_in:  x = normed hidden [H], y = qkv | z | b | a, the rows of in_proj_qkv,
//	                 in_proj_z, in_proj_b and in_proj_a (the convolution, recurrence and gating
//	                 that follow run on the CPU)
//	linear_attn_out: x = gated DeltaNet output [value heads · value_dim], y = [H]
//	mlp:      x = normed hidden [H], y = down(act(gate(x)) · up(x)) [H] (biases after each conv)
//	lm_head:  x = final-normed hidden [H], y = logits of the chunk's rows
//
// A sparse layer's experts have no program (they run on the CPU).
func Programs(cfg *arch.Config, opts Options, placed map[blobplan.Key]blobplan.Placement) ([]Program, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if opts.Blobs.WeightDType == dtype.F32 {
		return nil, fmt.Errorf("milgen: ANE programs take fp16 (or quantized) weights; %s weights are for the CPU (pack f32 bundles without programs)", opts.Blobs.WeightDType)
	}
	specs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		return nil, err
	}
	fam, err := arch.Lookup(cfg) // blobplan.Blobs has checked it
	if err != nil {
		return nil, err
	}
	act := cfg.HiddenAct
	var out []Program
	for _, spec := range specs {
		if spec.Key.Group == arch.GroupExperts {
			// No program: each token reads only the rows of the experts its router chose, which
			// one static program cannot; the experts run on the CPU between programs.
			continue
		}
		pl, ok := placed[spec.Key]
		if !ok {
			return nil, fmt.Errorf("milgen: no placement for blob %s", spec.Key)
		}
		recs, err := placeRecords(spec, pl)
		if err != nil {
			return nil, err
		}
		seqs := opts.Seqs
		in, outC := cfg.HiddenSize, spec.Records[0].Shape[0]
		if spec.Key.Group == arch.GroupLMHead {
			seqs = opts.LMHeadSeqs
		} else {
			g, _ := fam.Group(cfg, spec.Key.Group)
			in, outC = g.In, g.Out
		}
		for _, s := range seqs {
			k := format.Program{
				Kind: spec.Key.Group, Layer: spec.Key.Layer, Chunk: spec.Key.Chunk, Seq: s, Decode: s == format.DecodeSeq,
				Name:    fmt.Sprintf("%s.s%d", spec.Key, s),
				Weights: []format.ProgramWeight{{Path: spec.Path, Section: pl.Section}},
				Inputs:  []format.ProgramIO{{Name: "x", DType: dtype.F16.String(), Shape: []int{1, in, 1, s}}},
				Outputs: []format.ProgramIO{{Name: "y", DType: dtype.F16.String(), Shape: []int{1, outC, 1, s}}},
			}
			var text string
			switch spec.Key.Group {
			case arch.GroupMLP:
				text, err = genFFN(in, s, recs, act)
			default: // attn_qkv, attn_o, linear_attn_*, lm_head: convs concatenated, plus a bias
				text = genConcat(in, outC, s, recs)
			}
			if err != nil {
				return nil, fmt.Errorf("milgen: program %s: %w", k.Name, err)
			}
			out = append(out, Program{Program: k, Text: text})
		}
	}
	return out, nil
}

// placeRecords pairs a blob's specs with the records pack wrote.
func placeRecords(spec blobplan.Blob, pl blobplan.Placement) ([]placedRecord, error) {
	if len(pl.Records) != len(spec.Records) {
		return nil, fmt.Errorf("milgen: blob %s (section %q) has %d records; expected %d", spec.Key, pl.Section, len(pl.Records), len(spec.Records))
	}
	out := make([]placedRecord, len(spec.Records))
	for i, rs := range spec.Records {
		r := pl.Records[i]
		want := blobfile.DType(rs.DType.BlobCode())
		if r.DType != want || r.Size != rs.Size() || r.Offset < blobfile.HeaderSize || r.Offset%blobfile.Align != 0 {
			return nil, fmt.Errorf("milgen: blob %s record %d (%s): placed as %s, %d bytes at offset %d; expected %s, %d bytes at a 64-byte aligned offset >= 64",
				spec.Key, i, rs.Name, r.DType, r.Size, r.Offset, want, rs.Size())
		}
		out[i] = placedRecord{spec: rs, path: spec.Path, offset: r.Offset}
	}
	return out, nil
}
