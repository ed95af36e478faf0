package pack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/format"
)

// Section names. Linear weights live in one ANE weight blob per fused group per layer; the LM
// head (or the tied embedding) in blobs of at most MaxLMHeadRows rows.
const (
	TensorsSection   = "tensors"   // norms and biases (F32), untied embeddings
	TokenizerSection = "tokenizer" // compiled tokenizer tables
	FilePrefix       = "file/"     // original source files, verbatim
	BlobPrefix       = "blob/"     // ANE weight blob files
)

// MaxLMHeadRows is the largest output-channel count one ANE program handles (ane-facts §5).
const MaxLMHeadRows = 65536

// builder writes the sections of one bundle and collects the manifest's tensor views.
type builder struct {
	ctx      context.Context
	w        *format.Writer
	cfg      *arch.Config
	ckpt     *convert.Checkpoint
	target   convert.DType
	conv     convert.Converter
	progress func(done, total int64)
	done     int64
	total    int64
	views    map[string]*format.Tensor
	order    []string
}

func (b *builder) build(src *source, tables []byte, tokInfo json.RawMessage) (*format.Manifest, error) {
	fam, err := arch.Lookup(b.cfg)
	if err != nil {
		return nil, err
	}
	specs := fam.Tensors(b.cfg)
	b.views = make(map[string]*format.Tensor, len(specs))
	var params int64
	for _, t := range specs {
		b.total += convert.OutputSize(b.ckpt.Tensor(t.Name), b.storeDType(t))
		params += int64(arch.Elements(t.Shape))
		b.order = append(b.order, t.Name)
	}

	// Small files first, so `anepack inspect` reads them from the start of the file.
	files := []struct {
		name string
		data []byte
	}{{ConfigFile, src.configJSON}, {GenerationConfigFile, src.genJSON}, {TokenizerFile, src.tokJSON}, {TokenizerConfigFile, src.tokConfigRaw}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if _, err := b.w.Add(format.KindFile, FilePrefix+f.name, f.data); err != nil {
			return nil, err
		}
	}
	if _, err := b.w.Add(format.KindTokenizer, TokenizerSection, tables); err != nil {
		return nil, err
	}
	if err := b.writeSmallTensors(specs); err != nil {
		return nil, err
	}
	for layer := 0; layer < b.cfg.NumHiddenLayers; layer++ {
		for _, g := range groupsOf(specs, layer) {
			if err := b.writeGroupBlob(g); err != nil {
				return nil, err
			}
		}
	}
	if err := b.writeLMHead(); err != nil {
		return nil, err
	}

	cfgJSON, err := json.Marshal(b.cfg)
	if err != nil {
		return nil, err
	}
	m := &format.Manifest{
		FormatVersion: format.VersionString(),
		Producer:      "anepack " + Version,
		Model: format.Model{
			Architecture: b.cfg.Architecture,
			Config:       cfgJSON,
			DType:        elemDType(b.target),
			Parameters:   params,
		},
		Tokenizer: &format.Tokenizer{Section: TokenizerSection, Info: tokInfo},
	}
	for _, n := range b.order {
		if v := b.views[n]; v != nil {
			m.Tensors = append(m.Tensors, *v)
		}
	}
	return m, nil
}

// storeDType is the dtype a tensor is stored in: norms and biases always F32; linear weights
// and embeddings in the requested type.
func (b *builder) storeDType(t arch.Tensor) convert.DType {
	if t.Role == arch.RoleNorm || t.Role == arch.RoleBias {
		return convert.F32
	}
	return b.target
}

// writeTensor converts ref into w and reports progress; it drops the source pages afterwards.
func (b *builder) writeTensor(w io.Writer, ref *convert.TensorRef, dt convert.DType) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if err := b.conv.WriteTensor(w, ref, dt); err != nil {
		return fmt.Errorf("writing %s: %w", ref.Name, err)
	}
	b.ckpt.Done(ref)
	b.done += convert.OutputSize(ref, dt)
	if b.progress != nil {
		b.progress(b.done, b.total)
	}
	return nil
}

// writeSmallTensors writes norms, biases and (when untied) the embedding into the tensors
// section, each 64-byte aligned.
func (b *builder) writeSmallTensors(specs []arch.Tensor) error {
	sw, err := b.w.Begin(format.KindTensors, TensorsSection)
	if err != nil {
		return err
	}
	cw := &countingWriter{w: sw}
	for _, t := range specs {
		small := t.Role == arch.RoleNorm || t.Role == arch.RoleBias || (t.Role == arch.RoleEmbedding && !b.cfg.TieWordEmbeddings)
		if !small {
			continue
		}
		if err := cw.pad(64); err != nil {
			return err
		}
		ref := b.ckpt.Tensor(t.Name)
		dt := b.storeDType(t)
		off := cw.n
		if err := b.writeTensor(cw, ref, dt); err != nil {
			return err
		}
		b.views[t.Name] = &format.Tensor{Name: t.Name, DType: elemDType(dt), Shape: t.Shape,
			Parts: []format.TensorPart{{Section: TensorsSection, Offset: off, Rows: t.Shape[0], Size: cw.n - off}}}
	}
	_, err = b.w.End()
	return err
}

// group is one fused blob: its name and member tensors in record order.
type group struct {
	name    string
	members []arch.Tensor
}

// groupsOf lists the fused linear groups of a layer, in the order the family declares them.
func groupsOf(specs []arch.Tensor, layer int) []group {
	var gs []group
	index := map[string]int{}
	for _, t := range specs {
		if t.Layer != layer || t.Role != arch.RoleLinear || t.Group == "" {
			continue
		}
		i, ok := index[t.Group]
		if !ok {
			i = len(gs)
			index[t.Group] = i
			gs = append(gs, group{name: t.Group})
		}
		gs[i].members = append(gs[i].members, t)
	}
	for i := range gs {
		gs[i].name = fmt.Sprintf("layers.%d.%s", layer, gs[i].name)
	}
	return gs
}

func blobDType(d convert.DType) blobfile.DType {
	if d == convert.F32 {
		return blobfile.FP32
	}
	return blobfile.FP16
}

// writeGroupBlob writes one BLOBFILE section holding a record per member tensor and points each
// member's tensor view at its payload.
func (b *builder) writeGroupBlob(g group) error {
	entries := make([]blobfile.Entry, len(g.members))
	for i, t := range g.members {
		entries[i] = blobfile.Entry{DType: blobDType(b.target), Size: convert.OutputSize(b.ckpt.Tensor(t.Name), b.target)}
	}
	section := BlobPrefix + g.name
	sw, err := b.w.Begin(format.KindBlob, section)
	if err != nil {
		return err
	}
	bw, err := blobfile.NewWriter(sw, entries)
	if err != nil {
		return err
	}
	for _, t := range g.members {
		rec, err := bw.Next()
		if err != nil {
			return err
		}
		if err := b.writeTensor(bw, b.ckpt.Tensor(t.Name), b.target); err != nil {
			return err
		}
		b.views[t.Name] = &format.Tensor{Name: t.Name, DType: elemDType(b.target), Shape: t.Shape,
			Parts: []format.TensorPart{{Section: section, Offset: rec.DataOffset, Rows: t.Shape[0], Size: rec.Size}}}
	}
	if err := bw.Close(); err != nil {
		return err
	}
	_, err = b.w.End()
	return err
}

// LMHeadChunks splits vocab rows into the fewest equal chunks of at most MaxLMHeadRows rows.
func LMHeadChunks(vocab int) []int {
	n := (vocab + MaxLMHeadRows - 1) / MaxLMHeadRows
	chunks := make([]int, n)
	for i := range chunks {
		chunks[i] = vocab / n
		if i < vocab%n {
			chunks[i]++
		}
	}
	return chunks
}

// writeLMHead writes the output projection (lm_head, or the tied embedding) as one blob per
// chunk of rows. When tied, the embedding's tensor view points at the same bytes.
func (b *builder) writeLMHead() error {
	name := arch.LMHead
	if b.cfg.TieWordEmbeddings {
		name = arch.EmbedTokens
	}
	ref := b.ckpt.Tensor(name)
	rowBytes := len(ref.Data) / ref.Shape[0]
	view := &format.Tensor{Name: name, DType: elemDType(b.target), Shape: ref.Shape}
	row := 0
	for k, rows := range LMHeadChunks(ref.Shape[0]) {
		part := *ref
		part.Data = ref.Data[row*rowBytes : (row+rows)*rowBytes]
		part.Shape = []int{rows, ref.Shape[1]}
		section := fmt.Sprintf("%slm_head.%d", BlobPrefix, k)
		sw, err := b.w.Begin(format.KindBlob, section)
		if err != nil {
			return err
		}
		bw, err := blobfile.NewWriter(sw, []blobfile.Entry{{DType: blobDType(b.target), Size: convert.OutputSize(&part, b.target)}})
		if err != nil {
			return err
		}
		rec, err := bw.Next()
		if err != nil {
			return err
		}
		if err := b.writeTensor(bw, &part, b.target); err != nil {
			return err
		}
		if err := bw.Close(); err != nil {
			return err
		}
		if _, err := b.w.End(); err != nil {
			return err
		}
		view.Parts = append(view.Parts, format.TensorPart{Section: section, Offset: rec.DataOffset, Rows: rows, Size: rec.Size})
		row += rows
	}
	b.views[name] = view
	return nil
}

// countingWriter counts bytes and can pad with zeros to an alignment.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) pad(align int64) error {
	if r := c.n % align; r != 0 {
		_, err := c.Write(make([]byte, align-r))
		return err
	}
	return nil
}
