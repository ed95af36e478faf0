package blobplan

import (
	"fmt"
	"strings"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/dtype"
)

// MaxANEDim is the largest channel count one ANE tensor dimension takes (vocabularies above
// 65536 rows must be split; see docs/ane.md, "Limits").
const MaxANEDim = 65536

// DefaultLMHeadRows is the default number of rows of one LM-head chunk: the widest 1x1 conv
// known to have run on the ANE has 32000 output channels (docs/ane.md), so no chunk is wider.
const DefaultLMHeadRows = 32000

// RecordSpec describes one record of a program weight blob: which checkpoint rows its payload
// holds, and the MIL type the program declares for it. The payload is the rows of Tensors,
// concatenated in order, row-major, converted to DType.
type RecordSpec struct {
	// Name is the record's role in its group: the weight's slot without "_proj" ("q", "o",
	// "gate", ...), "<group>_bias" for a concatenating group's bias, "<slot>_bias" for an MLP
	// member's, or "lm_head".
	Name string
	// Slot is the weight's (or bias's) slot; arch.LMHead for an LM-head chunk of either tensor.
	Slot arch.Slot
	// Tensors are the Hugging Face tensors whose rows form the payload, in order. The bias of
	// a concatenating group concatenates its members' biases; a stacked expert weight its
	// experts' matrices, as the checkpoint stores them (arch.Tensor.Sources).
	Tensors []string
	// View is the bundle tensor the record's payload is (part of): Tensors[0] when empty. A
	// stacked expert weight is named apart from its sources.
	View string
	// RowStart and RowEnd select rows [RowStart, RowEnd) of the single tensor of an LM-head
	// chunk; both are 0 when every row of every tensor is stored.
	RowStart, RowEnd int
	// Shape is the MIL shape: [out, in, 1, 1] for weights, [1, C, 1, 1] for a bias.
	Shape []int
	// DType is the payload's element type: the bundle's weight type (the data type I8 or U4 of
	// a quantized weight), or F16 for a bias, a scale or an offset. A bias record is an
	// ANE-only copy (the CPU keeps the F32 bias tensors), and a [1, C, 1, 1] fp16 constant
	// broadcasts in one add.
	DType dtype.DType
	// Bias marks a bias record.
	Bias bool
	// Part says which part of a quantized weight the record holds: PartData (the codes),
	// PartScale or PartOffset; "" for a plain weight or a bias. The parts of one weight are
	// consecutive records, data first; Name is the weight's, with "_scale" / "_offset" added.
	Part string
	// Quant is the weight's scheme (dtype.Q8 or dtype.Q4) on each of its parts, else Invalid.
	Quant dtype.DType
	// Group is the Q4 group size (inputs per scale and offset).
	Group int
}

// The parts of a quantized weight.
const (
	PartData   = "data"
	PartScale  = "scale"
	PartOffset = "offset"
)

// Size returns the payload size in bytes.
func (r RecordSpec) Size() int64 { return r.DType.Bytes(int64(arch.Elements(r.Shape))) }

// Key identifies one blob file of a model.
type Key struct {
	Group string // a layer group of the family (arch.Family.Groups), or arch.GroupLMHead
	Layer int    // decoder layer; -1 for the LM head
	Chunk int    // LM-head chunk; 0 otherwise
}

// String names the blob as program names do: "layers.3.mlp", "lm_head.1".
func (k Key) String() string {
	if k.Group == arch.GroupLMHead {
		return fmt.Sprintf("%s.%d", k.Group, k.Chunk)
	}
	return fmt.Sprintf("layers.%d.%s", k.Layer, k.Group)
}

// Blob is one weight blob file: pack writes it (blobfile.NewWriter(w, blob.Entries()), then
// each record's payload in order) into a bundle section, and every program of its group names
// it by Path.
type Blob struct {
	Key     Key
	Path    string // the MIL BLOBFILE path, e.g. "@model_path/weights/attn_qkv.bin"
	Records []RecordSpec
}

// Entries returns the blobfile entries to write, in record order.
func (b Blob) Entries() []blobfile.Entry {
	e := make([]blobfile.Entry, len(b.Records))
	for i, r := range b.Records {
		e[i] = blobfile.Entry{DType: blobfile.DType(r.DType.BlobCode()), Size: r.Size()}
	}
	return e
}

// blobPath returns the BLOBFILE path of a group. Each program is compiled with its own weights
// dictionary, so the same name in every layer is unambiguous.
func blobPath(group string) string { return "@model_path/weights/" + group + ".bin" }

// recordName is the short name of a weight slot's record: "q_proj" -> "q".
func recordName(s arch.Slot) string { return strings.TrimSuffix(s.String(), "_proj") }

// familyOf returns the family of cfg and checks the channel counts one ANE dimension takes.
func familyOf(cfg *arch.Config) (*arch.Family, error) {
	if cfg == nil {
		return nil, fmt.Errorf("blobplan: nil config")
	}
	if err := arch.Validate(cfg); err != nil {
		return nil, fmt.Errorf("blobplan: config: %w", err)
	}
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return nil, fmt.Errorf("blobplan: %w", err)
	}
	for _, g := range fam.Groups(cfg) {
		if g.In > MaxANEDim || g.Out > MaxANEDim {
			return nil, fmt.Errorf("blobplan: group %s maps %d channels to %d; one ANE dimension holds at most %d", g.Name, g.In, g.Out, MaxANEDim)
		}
	}
	if cfg.IntermediateSize > MaxANEDim {
		return nil, fmt.Errorf("blobplan: intermediate_size %d; one ANE dimension holds at most %d", cfg.IntermediateSize, MaxANEDim)
	}
	return fam, nil
}

// GroupRecords returns the records of the blob file of group (one of the family's layer
// groups) in layer, with linear weights stored as dt (dtype.F16 or dtype.F32):
//
//	concatenating groups (attn_qkv, attn_o, linear_attn_in, linear_attn_out): one record per
//	  member weight [out, in, 1, 1], then, when the members have biases, one bias record
//	  [1, Σout, 1, 1] = their biases concatenated
//	mlp: gate, up, down [out, in, 1, 1], then a bias record [1, out, 1, 1] per biased member
//	experts: expert_gate_up [experts·2·moe_intermediate, hidden, 1, 1] and expert_down
//	  [experts·hidden, moe_intermediate, 1, 1], each expert's rows after the previous one's
func GroupRecords(cfg *arch.Config, group string, layer int, dt dtype.DType) ([]RecordSpec, error) {
	fam, err := familyOf(cfg)
	if err != nil {
		return nil, err
	}
	return groupRecords(fam, cfg, group, layer, dt, 32)
}

func groupRecords(fam *arch.Family, cfg *arch.Config, group string, layer int, dt dtype.DType, gsize int) ([]RecordSpec, error) {
	if dt != dtype.F16 && dt != dtype.F32 && !dt.Quantized() {
		return nil, fmt.Errorf("blobplan: weight dtype %s; expected f16, f32, q8 or q4", dt)
	}
	if layer < 0 || layer >= cfg.NumHiddenLayers {
		return nil, fmt.Errorf("blobplan: layer %d out of range [0, %d)", layer, cfg.NumHiddenLayers)
	}
	g, ok := fam.Group(cfg, group)
	if !ok || !fam.LayerHasGroup(cfg, layer, g) {
		var names []string
		for _, g := range fam.LayerGroups(cfg, layer) {
			names = append(names, g.Name)
		}
		return nil, fmt.Errorf("blobplan: unknown group %q; layer %d of %s has %s", group, layer, cfg.Architecture, strings.Join(names, ", "))
	}
	var recs []RecordSpec
	for _, s := range g.Linears {
		t := fam.Tensor(cfg, s, layer)
		rows, cols := t.Matrix()
		w := RecordSpec{Name: recordName(s), Slot: s, Tensors: []string{t.Name}, Shape: []int{rows, cols, 1, 1}, DType: dt}
		if t.Sources != nil {
			w.View, w.Tensors = t.Name, nil
			for _, src := range t.Sources {
				w.Tensors = append(w.Tensors, src.Name)
			}
		}
		parts, err := weightRecords(w, dt, gsize)
		if err != nil {
			return nil, fmt.Errorf("blobplan: %s of layer %d: %w", fam.TensorName(s, layer), layer, err)
		}
		recs = append(recs, parts...)
	}
	if !g.HasBias() {
		return recs, nil
	}
	if g.Name == arch.GroupMLP {
		for i, b := range g.Biases {
			if b != arch.SlotNone {
				recs = append(recs, RecordSpec{Name: recordName(g.Linears[i]) + "_bias", Slot: b, Bias: true,
					Tensors: []string{fam.TensorName(b, layer)}, Shape: []int{1, arch.Shape(cfg, b)[0], 1, 1}, DType: dtype.F16})
			}
		}
		return recs, nil
	}
	bias := RecordSpec{Name: strings.TrimPrefix(g.Name, "attn_") + "_bias", Bias: true, Shape: []int{1, g.Out, 1, 1}, DType: dtype.F16}
	for i, b := range g.Biases {
		if b == arch.SlotNone {
			return nil, fmt.Errorf("blobplan: group %s: %s has a bias but %s has none; a concatenated bias needs all or none", g.Name, g.Biases[0], g.Linears[i])
		}
		bias.Tensors = append(bias.Tensors, fam.TensorName(b, layer))
	}
	bias.Slot = g.Biases[0]
	return append(recs, bias), nil
}

// weightRecords returns the records of one weight w (its Shape [out, in, 1, 1]) stored as dt:
// w itself for f16 and f32; for q8 the int8 data and a per-row fp16 scale [out]; for q4 the
// uint4 data and per-group fp16 scale and offset [out, in/gsize, 1, 1].
func weightRecords(w RecordSpec, dt dtype.DType, gsize int) ([]RecordSpec, error) {
	if !dt.Quantized() {
		return []RecordSpec{w}, nil
	}
	if dt == dtype.MXFP4 {
		// Its E8M0 scales have no MIL op: mxfp4 weights stay in the CPU's tensor sections.
		return nil, fmt.Errorf("an mxfp4 weight has no ANE blob form (no MIL op reads E8M0 scales); the CPU reads it")
	}
	out, in := w.Shape[0], w.Shape[1]
	w.DType, w.Part, w.Quant = dt.Data(), PartData, dt
	scale, offset := w, w
	scale.Name, scale.Part, scale.DType = w.Name+"_scale", PartScale, dtype.F16
	offset.Name, offset.Part, offset.DType = w.Name+"_offset", PartOffset, dtype.F16
	if dt == dtype.Q8 {
		scale.Shape = []int{out}
		return []RecordSpec{w, scale}, nil
	}
	if gsize <= 0 || in%gsize != 0 {
		return nil, fmt.Errorf("group size %d does not divide its %d inputs; choose a group size that divides every layer's input (32, 64 or 128)", gsize, in)
	}
	w.Group, scale.Group, offset.Group = gsize, gsize, gsize
	scale.Shape = []int{out, in / gsize, 1, 1}
	offset.Shape = scale.Shape
	return []RecordSpec{w, scale, offset}, nil
}

// LMHeadChunks splits the vocabulary into row ranges [start, end) of at most maxRows rows
// (0 means DefaultLMHeadRows): as few chunks as possible, of equal size rounded up to a
// multiple of 64 channels where that stays within maxRows, the last one shorter. Pack stores
// the LM head (or the tied embedding) as one tensor part per chunk, so the CPU and the ANE read
// the same bytes.
func LMHeadChunks(vocab, maxRows int) ([][2]int, error) {
	if maxRows == 0 {
		maxRows = DefaultLMHeadRows
	}
	if vocab <= 0 || maxRows <= 0 || maxRows > MaxANEDim {
		return nil, fmt.Errorf("blobplan: cannot split %d rows into chunks of at most %d (limit %d)", vocab, maxRows, MaxANEDim)
	}
	n := (vocab + maxRows - 1) / maxRows
	rows := (vocab + n - 1) / n
	if r64 := (rows + 63) &^ 63; r64 <= maxRows && r64*(n-1) < vocab {
		rows = r64
	}
	out := make([][2]int, 0, n)
	for start := 0; start < vocab; start += rows {
		out = append(out, [2]int{start, min(start+rows, vocab)})
	}
	return out, nil
}

// lmHeadSource returns the tensor the LM head reads and its dtype: the embedding when tied,
// else lm_head.weight. Unquantized, a tied embedding is FP16 like every embedding and an untied
// head has the bundle's dtype. Quantized bundles keep the head (tied or not) at q8 whatever the
// layers' scheme: it is the largest matrix of small models and the one whose error reaches the
// logits directly (llama.cpp likewise keeps it at 6 bits or more); see docs/quantization.md.
func lmHeadSource(fam *arch.Family, cfg *arch.Config, dt dtype.DType) (string, dtype.DType) {
	if dt.Quantized() {
		dt = dtype.Q8
	}
	if cfg.TieWordEmbeddings {
		if !dt.Quantized() {
			dt = dtype.F16
		}
		return fam.TensorName(arch.EmbedTokens, -1), dt
	}
	return fam.TensorName(arch.LMHead, -1), dt
}

// Blobs lists every blob file of a model in a stable order: per layer the groups it runs
// (those of its token mixer, then the MLP); then the LM-head chunks.
func Blobs(cfg *arch.Config, opts Options) ([]Blob, error) {
	opts, err := opts.Normalize()
	if err != nil {
		return nil, err
	}
	fam, err := familyOf(cfg)
	if err != nil {
		return nil, err
	}
	var out []Blob
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		for _, g := range fam.LayerGroups(cfg, l) {
			recs, err := groupRecords(fam, cfg, g.Name, l, opts.WeightDType, opts.GroupSize)
			if err != nil {
				return nil, err
			}
			out = append(out, Blob{Key: Key{Group: g.Name, Layer: l}, Path: blobPath(g.Name), Records: recs})
		}
	}
	chunks, err := LMHeadChunks(cfg.VocabSize, opts.MaxLMHeadRows)
	if err != nil {
		return nil, err
	}
	src, dt := lmHeadSource(fam, cfg, opts.WeightDType)
	if opts.LMHeadDType != dtype.Invalid {
		dt = opts.LMHeadDType
	}
	for i, ch := range chunks {
		recs, err := weightRecords(RecordSpec{Name: "lm_head", Slot: arch.LMHead, Tensors: []string{src}, RowStart: ch[0], RowEnd: ch[1],
			Shape: []int{ch[1] - ch[0], cfg.HiddenSize, 1, 1}, DType: dt}, dt, opts.GroupSize)
		if err != nil {
			return nil, fmt.Errorf("blobplan: LM head: %w", err)
		}
		out = append(out, Blob{Key: Key{Group: arch.GroupLMHead, Layer: -1, Chunk: i}, Path: blobPath(arch.GroupLMHead), Records: recs})
	}
	return out, nil
}

// Placement says where pack wrote one blob file: the bundle section holding the whole file,
// and its records as written (blobfile.Writer.Records()).
type Placement struct {
	Section string
	Records []blobfile.Record
}

// Place computes the placement of every blob written alone into its own section, named by
// section; record offsets follow blobfile.Layout. It is what pack's placements are when each
// blob file is one section, for callers that generate programs without writing a bundle.
func Place(blobs []Blob, section func(Blob) string) map[Key]Placement {
	m := make(map[Key]Placement, len(blobs))
	for _, s := range blobs {
		recs, _ := blobfile.Layout(s.Entries())
		m[s.Key] = Placement{Section: section(s), Records: recs}
	}
	return m
}
