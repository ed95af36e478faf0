package mil

import (
	"fmt"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/dtype"
)

// DecodeSeq is the spatial size of decode kernels: one live column padded to the ANE's
// 32-element fp16 row (docs/ane.md).
const DecodeSeq = 32

// DefaultGroupSize is the default number of inputs per scale and offset of q4 weights.
const DefaultGroupSize = 32

// DefaultSeqs are the default prefill buckets.
var DefaultSeqs = []int{32, 64, 128, 256, 512}

// Options chooses which kernels Programs generates.
type Options struct {
	// Seqs are the prefill buckets (spatial sizes S, multiples of 32); nil means DefaultSeqs.
	// The S = 32 kernel also serves decode and is always generated.
	Seqs []int
	// LMHeadSeqs are the spatial sizes of the LM-head kernels; nil means [32]. Generation
	// only needs logits of the last position, and a run of positions can be fed 32 at a time,
	// so one size saves compiles (the ANE allows about 119 per process, docs/ane.md).
	LMHeadSeqs []int
	// WeightDType is the storage type of linear weights: dtype.F16 (default), dtype.F32,
	// dtype.Q8 or dtype.Q4. BlobSpecs lays out any; Programs generates kernels for F16 and the
	// quantized types (read through MIL constexpr ops) only, since the ANE computes in fp16 and
	// no runtime has shown it a cast of fp32 weights (M1 and M2 refuse cast): an f32 bundle is
	// a CPU bundle.
	WeightDType dtype.DType
	// GroupSize is the number of inputs per scale and offset of Q4 weights (32, 64 or 128);
	// 0 means DefaultGroupSize.
	GroupSize int
	// LMHeadDType overrides the LM head's storage (and, when tied, the embedding's); Invalid
	// means the rule of lmHeadSource (q8 in quantized bundles). An MLX 4-bit checkpoint keeps
	// its 4-bit head: dtype.Q4.
	LMHeadDType dtype.DType
	// MaxLMHeadRows bounds the rows of one LM-head chunk; 0 means DefaultLMHeadRows.
	MaxLMHeadRows int
}

func (o Options) normalize() (Options, error) {
	if o.Seqs == nil {
		o.Seqs = DefaultSeqs
	}
	if o.LMHeadSeqs == nil {
		o.LMHeadSeqs = []int{DecodeSeq}
	}
	if o.WeightDType == dtype.Invalid {
		o.WeightDType = dtype.F16
	}
	if o.WeightDType != dtype.F16 && o.WeightDType != dtype.F32 && !o.WeightDType.Quantized() {
		return o, fmt.Errorf("mil: weight dtype %s; expected f16, f32, q8 or q4", o.WeightDType)
	}
	if o.GroupSize == 0 {
		o.GroupSize = DefaultGroupSize
	}
	if o.GroupSize != 32 && o.GroupSize != 64 && o.GroupSize != 128 {
		return o, fmt.Errorf("mil: group size %d; expected 32, 64 or 128", o.GroupSize)
	}
	if o.MaxLMHeadRows == 0 {
		o.MaxLMHeadRows = DefaultLMHeadRows
	}
	if o.MaxLMHeadRows < 64 || o.MaxLMHeadRows > MaxANEDim {
		return o, fmt.Errorf("mil: LM-head chunk rows %d; expected 64 to %d", o.MaxLMHeadRows, MaxANEDim)
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
			return nil, fmt.Errorf("mil: Options.%s: %d is not a positive multiple of 32 up to %d (fp16 rows are padded to 32 elements, docs/ane.md)", field, s, MaxANEDim)
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
	Kind   string // a layer group of the family, or GroupLMHead
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

// KernelIO is one [1, C, 1, S] input or output.
type KernelIO struct {
	Name  string
	DType dtype.DType // dtype.F16
	Shape []int
}

// placedRecord is a record spec with the path and offset the MIL names it by.
type placedRecord struct {
	spec   RecordSpec
	path   string
	offset int64
}

// Programs generates every kernel of a model: for each layer and each bucket the family's
// group programs, then the LM-head chunks for each LMHeadSeqs size. placed says where pack
// wrote each blob listed by BlobSpecs (see Place); every record is checked against its spec.
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
func Programs(cfg *arch.Config, opts Options, placed map[BlobKey]Placement) ([]Kernel, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if opts.WeightDType == dtype.F32 {
		return nil, fmt.Errorf("mil: ANE kernels take fp16 (or quantized) weights; %s weights are for the CPU (pack f32 bundles without kernels)", opts.WeightDType)
	}
	specs, err := BlobSpecs(cfg, opts)
	if err != nil {
		return nil, err
	}
	fam, err := modelOf(cfg)
	if err != nil {
		return nil, err
	}
	act := cfg.HiddenAct
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
		in, outC := cfg.HiddenSize, spec.Records[0].Shape[0]
		if spec.Key.Group == GroupLMHead {
			seqs = opts.LMHeadSeqs
		} else {
			g, _ := fam.Group(cfg, spec.Key.Group)
			in, outC = g.In, g.Out
		}
		for _, s := range seqs {
			k := Kernel{
				Kind: spec.Key.Group, Layer: spec.Key.Layer, Chunk: spec.Key.Chunk, Seq: s, Decode: s == DecodeSeq,
				Name:    fmt.Sprintf("%s.s%d", spec.Key, s),
				Weights: []KernelWeight{{Path: spec.Path, Section: pl.Section}},
			}
			switch spec.Key.Group {
			case arch.GroupMLP:
				k.MIL, err = genFFN(in, s, recs, act)
			default: // attn_qkv, attn_o, linear_attn_*, lm_head: convs concatenated, plus a bias
				k.MIL = genConcat(in, outC, s, recs)
			}
			if err != nil {
				return nil, fmt.Errorf("mil: kernel %s: %w", k.Name, err)
			}
			k.Inputs = []KernelIO{{Name: "x", DType: dtype.F16, Shape: []int{1, in, 1, s}}}
			k.Outputs = []KernelIO{{Name: "y", DType: dtype.F16, Shape: []int{1, outC, 1, s}}}
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
		want := blobfile.DType(rs.DType.BlobCode())
		if r.DType != want || r.Size != rs.Size() || r.Offset < blobfile.HeaderSize || r.Offset%blobfile.Align != 0 {
			return nil, fmt.Errorf("mil: blob %s record %d (%s): placed as %s, %d bytes at offset %d; expected %s, %d bytes at a 64-byte aligned offset >= 64",
				spec.Key, i, rs.Name, r.DType, r.Size, r.Offset, want, rs.Size())
		}
		out[i] = placedRecord{spec: rs, path: spec.Path, offset: r.Offset}
	}
	return out, nil
}
