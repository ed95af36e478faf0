package mil

import (
	"fmt"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
)

// DecodeSeq is the spatial size of decode kernels: one live column padded to the ANE's
// 32-element fp16 row (ane-facts §2.3, §3.5).
const DecodeSeq = 32

// DefaultSeqs are the default prefill buckets.
var DefaultSeqs = []int{32, 64, 128, 256, 512}

// Options chooses which kernels Programs generates.
type Options struct {
	// Seqs are the prefill buckets (spatial sizes S, multiples of 32); nil means DefaultSeqs.
	// The S = 32 kernel also serves decode and is always generated.
	Seqs []int
	// LMHeadSeqs are the spatial sizes of the LM-head kernels; nil means [32]. Generation
	// only needs logits of the last position, and a run of positions can be fed 32 at a time,
	// so one size saves compiles (the ANE allows ~119 per process, ane-facts §1.8).
	LMHeadSeqs []int
	// WeightDType is the storage type of linear weights: blobfile.FP16 (default) or FP32.
	WeightDType blobfile.DType
	// MaxLMHeadRows bounds the rows of one LM-head chunk; 0 means MaxANEDim (65536).
	MaxLMHeadRows int
}

func (o Options) normalize() (Options, error) {
	if o.Seqs == nil {
		o.Seqs = DefaultSeqs
	}
	if o.LMHeadSeqs == nil {
		o.LMHeadSeqs = []int{DecodeSeq}
	}
	if o.WeightDType == 0 {
		o.WeightDType = blobfile.FP16
	}
	if o.WeightDType != blobfile.FP16 && o.WeightDType != blobfile.FP32 {
		return o, fmt.Errorf("mil: weight dtype %s; expected fp16 or fp32", o.WeightDType)
	}
	var err error
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
	out := []int{DecodeSeq}
	for _, s := range seqs {
		if s <= 0 || s%32 != 0 || s > MaxANEDim {
			return nil, fmt.Errorf("mil: Options.%s: %d is not a positive multiple of 32 up to %d (fp16 rows are padded to 32 elements, ane-facts §2.3)", field, s, MaxANEDim)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Kernel is one generated ANE program, with what a bundle manifest records about it
// (format.Kernel has the same fields).
type Kernel struct {
	Name   string // unique, e.g. "layers.0.attn_qkv.s64", "lm_head.1.s32"
	Kind   string // arch.GroupQKV, arch.GroupO, arch.GroupMLP or GroupLMHead
	Layer  int    // decoder layer, or -1
	Chunk  int    // LM-head chunk
	Seq    int    // S of the [1, C, 1, S] I/O
	Decode bool   // S = DecodeSeq: also the decode kernel (one live column)
	MIL    string
	// Weights binds each BLOBFILE path of the text to the bundle section holding the file.
	Weights []KernelWeight
	Inputs  []KernelIO
	Outputs []KernelIO
}

// KernelWeight binds a BLOBFILE path to a bundle section.
type KernelWeight struct {
	Path    string
	Section string
}

// KernelIO is one fp16 [1, C, 1, S] input or output.
type KernelIO struct {
	Name  string
	DType string // "fp16"
	Shape []int
}

// placedRecord is a record spec with the path and offset the MIL names it by.
type placedRecord struct {
	spec   RecordSpec
	path   string
	offset int64
}

// Programs generates every kernel of a model: for each layer and each bucket the QKV, O and
// FFN programs, then the LM-head chunks for each LMHeadSeqs size. placed says where pack wrote
// each blob listed by BlobSpecs (see Place); every record is checked against its spec.
//
// Each program has one input x [1, Cin, 1, S] and one output y [1, Cout, 1, S], fp16:
//
//	attn_qkv: x = normed hidden [H], y = q | k | v (+ bias) [Cq + 2·Ckv], channel c of q is
//	          head c / head_dim, dimension c % head_dim (the rows of q_proj), likewise k and v
//	attn_o:   x = attention output [Cq], y = [H]
//	mlp:      x = normed hidden [H], y = down(silu(gate(x)) · up(x)) [H]
//	lm_head:  x = final-normed hidden [H], y = logits of the chunk's rows
func Programs(cfg *arch.Config, opts Options, placed map[BlobKey]Placement) ([]Kernel, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	specs, err := BlobSpecs(cfg, opts)
	if err != nil {
		return nil, err
	}
	d, err := configDims(cfg)
	if err != nil {
		return nil, err
	}
	var out []Kernel
	for _, spec := range specs {
		pl, ok := placed[spec.Key]
		if !ok {
			return nil, fmt.Errorf("mil: no placement for blob %s", spec.Key)
		}
		recs, err := placeRecords(spec, pl)
		if err != nil {
			return nil, err
		}
		seqs := opts.Seqs
		if spec.Key.Group == GroupLMHead {
			seqs = opts.LMHeadSeqs
		}
		for _, s := range seqs {
			k := Kernel{
				Kind: spec.Key.Group, Layer: spec.Key.Layer, Chunk: spec.Key.Chunk, Seq: s, Decode: s == DecodeSeq,
				Name:    fmt.Sprintf("%s.s%d", spec.Key, s),
				Weights: []KernelWeight{{Path: spec.Path, Section: pl.Section}},
			}
			var in, outC int
			switch spec.Key.Group {
			case arch.GroupQKV:
				in, outC = d.hidden, d.q+2*d.kv
				var bias *placedRecord
				if len(recs) == 4 {
					bias = &recs[3]
				}
				k.MIL = genQKV(d.hidden, d.q, d.kv, s, recs[0], recs[1], recs[2], bias)
			case arch.GroupO:
				in, outC = d.q, d.hidden
				k.MIL = genLinear(d.q, d.hidden, s, recs[0])
			case arch.GroupMLP:
				in, outC = d.hidden, d.hidden
				k.MIL = genFFN(d.hidden, d.inter, s, recs[0], recs[1], recs[2])
			case GroupLMHead:
				in, outC = d.hidden, recs[0].spec.Shape[0]
				k.MIL = genLinear(d.hidden, outC, s, recs[0])
			}
			k.Inputs = []KernelIO{{Name: "x", DType: "fp16", Shape: []int{1, in, 1, s}}}
			k.Outputs = []KernelIO{{Name: "y", DType: "fp16", Shape: []int{1, outC, 1, s}}}
			out = append(out, k)
		}
	}
	return out, nil
}

// placeRecords pairs a blob's specs with the records pack wrote.
func placeRecords(spec BlobSpec, pl Placement) ([]placedRecord, error) {
	if len(pl.Records) != len(spec.Records) {
		return nil, fmt.Errorf("mil: blob %s (section %q) has %d records; expected %d", spec.Key, pl.Section, len(pl.Records), len(spec.Records))
	}
	out := make([]placedRecord, len(spec.Records))
	for i, rs := range spec.Records {
		r := pl.Records[i]
		if r.DType != rs.DType || r.Size != rs.Size() || r.Offset < blobfile.HeaderSize || r.Offset%blobfile.Align != 0 {
			return nil, fmt.Errorf("mil: blob %s record %d (%s): placed as %s, %d bytes at offset %d; expected %s, %d bytes at a 64-byte aligned offset >= 64",
				spec.Key, i, rs.Name, r.DType, r.Size, r.Offset, rs.DType, rs.Size())
		}
		out[i] = placedRecord{spec: rs, path: spec.Path, offset: r.Offset}
	}
	return out, nil
}
