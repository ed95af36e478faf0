package mil

import (
	"fmt"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
)

// GroupLMHead is the kernel group of the LM head chunks (the layer groups are arch.GroupQKV,
// arch.GroupO and arch.GroupMLP).
const GroupLMHead = "lm_head"

// MaxANEDim is the largest channel count one ANE tensor dimension takes (ane-facts §5:
// vocabularies above 65536 rows must be split).
const MaxANEDim = 65536

// RecordSpec describes one record of a kernel weight blob: which checkpoint rows its payload
// holds, and the MIL type the kernel declares for it. The payload is the rows of Tensors,
// concatenated in order, row-major, converted to DType.
type RecordSpec struct {
	// Name is the record's role in its group: "q", "k", "v", "qkv_bias", "o", "gate", "up",
	// "down" or "lm_head".
	Name string
	// Tensors are the Hugging Face tensors whose rows form the payload, in order. The QKV
	// bias record concatenates the q, k and v biases.
	Tensors []string
	// RowStart and RowEnd select rows [RowStart, RowEnd) of the single tensor of an LM-head
	// chunk; both are 0 when every row of every tensor is stored.
	RowStart, RowEnd int
	// Shape is the MIL shape: [out, in, 1, 1] for weights, [1, C, 1, 1] for the bias.
	Shape []int
	// DType is FP16, or FP32 for the weights of --dtype f32 bundles. The bias record is FP16
	// whatever the bundle dtype: it is an ANE-only copy (the CPU keeps its F32 bias tensors),
	// and a [1, C, 1, 1] fp16 constant broadcasts in one add.
	DType blobfile.DType
}

// Size returns the payload size in bytes.
func (r RecordSpec) Size() int64 {
	n := int64(arch.Elements(r.Shape))
	if r.DType == blobfile.FP32 {
		return 4 * n
	}
	return 2 * n
}

// BlobKey identifies one blob file of a model.
type BlobKey struct {
	Group string // arch.GroupQKV, arch.GroupO, arch.GroupMLP or GroupLMHead
	Layer int    // decoder layer; -1 for the LM head
	Chunk int    // LM-head chunk; 0 otherwise
}

// String names the blob as kernel names do: "layers.3.mlp", "lm_head.1".
func (k BlobKey) String() string {
	if k.Group == GroupLMHead {
		return fmt.Sprintf("%s.%d", k.Group, k.Chunk)
	}
	return fmt.Sprintf("layers.%d.%s", k.Layer, k.Group)
}

// BlobSpec is one weight blob file: pack writes it (blobfile.NewWriter(w, spec.Entries()),
// then each record's payload in order) into a bundle section, and every kernel of its group
// names it by Path.
type BlobSpec struct {
	Key     BlobKey
	Path    string // the MIL BLOBFILE path, e.g. "@model_path/weights/attn_qkv.bin"
	Records []RecordSpec
}

// Entries returns the blobfile entries to write, in record order.
func (b BlobSpec) Entries() []blobfile.Entry {
	e := make([]blobfile.Entry, len(b.Records))
	for i, r := range b.Records {
		e[i] = blobfile.Entry{DType: r.DType, Size: r.Size()}
	}
	return e
}

// blobPath returns the BLOBFILE path of a group. Each kernel is compiled with its own weights
// dictionary, so the same name in every layer is unambiguous.
func blobPath(group string) string { return "@model_path/weights/" + group + ".bin" }

// dims holds the channel counts of a config.
type dims struct {
	hidden, inter, q, kv, vocab int
	bias                        bool // q/k/v projections have biases
}

func configDims(cfg *arch.Config) (dims, error) {
	if cfg == nil {
		return dims{}, fmt.Errorf("mil: nil config")
	}
	d := dims{
		hidden: cfg.HiddenSize, inter: cfg.IntermediateSize, vocab: cfg.VocabSize,
		q: cfg.NumAttentionHeads * cfg.HeadDim, kv: cfg.NumKeyValueHeads * cfg.HeadDim,
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", d.hidden}, {"intermediate_size", d.inter}, {"vocab_size", d.vocab},
		{"num_attention_heads*head_dim", d.q}, {"num_key_value_heads*head_dim", d.kv}, {"num_hidden_layers", cfg.NumHiddenLayers}} {
		if f.v <= 0 {
			return dims{}, fmt.Errorf("mil: config %s is %d; expected a positive number", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", d.hidden}, {"intermediate_size", d.inter}, {"q+k+v channels", d.q + 2*d.kv}} {
		if f.v > MaxANEDim {
			return dims{}, fmt.Errorf("mil: config %s is %d; one ANE dimension holds at most %d", f.name, f.v, MaxANEDim)
		}
	}
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return dims{}, fmt.Errorf("mil: %w", err)
	}
	qb := arch.LayerTensor(0, arch.QBias)
	for _, t := range fam.Tensors(cfg) {
		if t.Name == qb {
			d.bias = true
		}
	}
	return d, nil
}

// GroupRecords returns the records of the blob file of group (arch.GroupQKV, arch.GroupO or
// arch.GroupMLP) in layer, with linear weights stored as dtype (blobfile.FP16 or FP32):
//
//	attn_qkv: q [Cq, H, 1, 1], k [Ckv, H, 1, 1], v [Ckv, H, 1, 1], and when the family has
//	          biases qkv_bias [1, Cq+2Ckv, 1, 1] fp16 = q_proj.bias | k_proj.bias | v_proj.bias
//	attn_o:   o [H, Cq, 1, 1]
//	mlp:      gate [I, H, 1, 1], up [I, H, 1, 1], down [H, I, 1, 1]
func GroupRecords(cfg *arch.Config, group string, layer int, dtype blobfile.DType) ([]RecordSpec, error) {
	d, err := configDims(cfg)
	if err != nil {
		return nil, err
	}
	return groupRecords(cfg, d, group, layer, dtype)
}

func groupRecords(cfg *arch.Config, d dims, group string, layer int, dtype blobfile.DType) ([]RecordSpec, error) {
	if dtype != blobfile.FP16 && dtype != blobfile.FP32 {
		return nil, fmt.Errorf("mil: weight dtype %s; expected fp16 or fp32", dtype)
	}
	if layer < 0 || layer >= cfg.NumHiddenLayers {
		return nil, fmt.Errorf("mil: layer %d out of range [0, %d)", layer, cfg.NumHiddenLayers)
	}
	lt := func(s string) []string { return []string{arch.LayerTensor(layer, s)} }
	w := func(name, tensor string, out, in int) RecordSpec {
		return RecordSpec{Name: name, Tensors: lt(tensor), Shape: []int{out, in, 1, 1}, DType: dtype}
	}
	switch group {
	case arch.GroupQKV:
		r := []RecordSpec{w("q", arch.QProj, d.q, d.hidden), w("k", arch.KProj, d.kv, d.hidden), w("v", arch.VProj, d.kv, d.hidden)}
		if d.bias {
			r = append(r, RecordSpec{Name: "qkv_bias",
				Tensors: []string{arch.LayerTensor(layer, arch.QBias), arch.LayerTensor(layer, arch.KBias), arch.LayerTensor(layer, arch.VBias)},
				Shape:   []int{1, d.q + 2*d.kv, 1, 1}, DType: blobfile.FP16})
		}
		return r, nil
	case arch.GroupO:
		return []RecordSpec{w("o", arch.OProj, d.hidden, d.q)}, nil
	case arch.GroupMLP:
		return []RecordSpec{w("gate", arch.GateProj, d.inter, d.hidden), w("up", arch.UpProj, d.inter, d.hidden), w("down", arch.DownProj, d.hidden, d.inter)}, nil
	}
	return nil, fmt.Errorf("mil: unknown group %q; expected %s, %s or %s", group, arch.GroupQKV, arch.GroupO, arch.GroupMLP)
}

// LMHeadChunks splits the vocabulary into row ranges [start, end) of at most maxRows rows
// (0 means MaxANEDim): as few chunks as possible, of equal size rounded up to a multiple of 64
// channels where that stays within maxRows, the last one shorter. Pack stores the LM head (or
// the tied embedding) as one tensor part per chunk, so the CPU and the ANE read the same bytes.
func LMHeadChunks(vocab, maxRows int) ([][2]int, error) {
	if maxRows == 0 {
		maxRows = MaxANEDim
	}
	if vocab <= 0 || maxRows <= 0 || maxRows > MaxANEDim {
		return nil, fmt.Errorf("mil: cannot split %d rows into chunks of at most %d (limit %d)", vocab, maxRows, MaxANEDim)
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

// lmHeadSource returns the tensor the LM head reads and its dtype: the embedding when tied
// (embeddings are always FP16, arch.RoleEmbedding), else lm_head.weight in the bundle dtype.
func lmHeadSource(cfg *arch.Config, dtype blobfile.DType) (string, blobfile.DType) {
	if cfg.TieWordEmbeddings {
		return arch.EmbedTokens, blobfile.FP16
	}
	return arch.LMHead, dtype
}

// BlobSpecs lists every blob file of a model in a stable order: per layer attn_qkv, attn_o,
// mlp; then the LM-head chunks.
func BlobSpecs(cfg *arch.Config, opts Options) ([]BlobSpec, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	d, err := configDims(cfg)
	if err != nil {
		return nil, err
	}
	var out []BlobSpec
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		for _, g := range []string{arch.GroupQKV, arch.GroupO, arch.GroupMLP} {
			recs, err := groupRecords(cfg, d, g, l, opts.WeightDType)
			if err != nil {
				return nil, err
			}
			out = append(out, BlobSpec{Key: BlobKey{Group: g, Layer: l}, Path: blobPath(g), Records: recs})
		}
	}
	chunks, err := LMHeadChunks(d.vocab, opts.MaxLMHeadRows)
	if err != nil {
		return nil, err
	}
	src, dt := lmHeadSource(cfg, opts.WeightDType)
	for i, ch := range chunks {
		out = append(out, BlobSpec{
			Key:  BlobKey{Group: GroupLMHead, Layer: -1, Chunk: i},
			Path: blobPath(GroupLMHead),
			Records: []RecordSpec{{Name: "lm_head", Tensors: []string{src}, RowStart: ch[0], RowEnd: ch[1],
				Shape: []int{ch[1] - ch[0], d.hidden, 1, 1}, DType: dt}},
		})
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
// section; record offsets follow blobfile.Layout. Pack uses it when it writes each blob file
// as one section, which is the layout Programs expects by default.
func Place(specs []BlobSpec, section func(BlobSpec) string) map[BlobKey]Placement {
	m := make(map[BlobKey]Placement, len(specs))
	for _, s := range specs {
		recs, _ := blobfile.Layout(s.Entries())
		m[s.Key] = Placement{Section: section(s), Records: recs}
	}
	return m
}
