package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/milgen"
)

// Section names. Linear weights live in one ANE weight blob per fused group per layer; the LM
// head (or the tied embedding) in blobs of at most MaxLMHeadRows rows.
const (
	TensorsSection   = "tensors"   // norms and biases (F32), untied embeddings
	MILSection       = "mil"       // the texts of every ANE program, one after another
	TokenizerSection = "tokenizer" // compiled tokenizer tables
	FilePrefix       = "file/"     // original source files, verbatim
	BlobPrefix       = "blob/"     // ANE weight blob files
)

// builder writes the sections of one bundle and collects the manifest's tensor views.
type builder struct {
	ctx      context.Context
	w        *format.Writer
	cfg      *arch.Config
	ckpt     *convert.Checkpoint
	target   dtype.DType
	conv     convert.Converter
	progress func(done, total int64)
	done     int64
	total    int64
	views    map[string]*format.Tensor
	order    []string
	specs    map[string]arch.Tensor // the architecture's description of each tensor, by name
	milOpts  milgen.Options
	// noPrograms skips MIL generation (the blobs are written either way: the CPU reads them).
	noPrograms bool
	// qbuf holds the buffers of the last quantized weight, which the next one reuses.
	qbuf quantBuffers
}

func (b *builder) build(src *source, tok *tokenizerJob) (*format.Manifest, error) {
	fam, err := arch.Lookup(b.cfg)
	if err != nil {
		return nil, err
	}
	specs := fam.Tensors(b.cfg)
	b.views = make(map[string]*format.Tensor, len(specs))
	b.specs = make(map[string]arch.Tensor, len(specs))
	for _, t := range specs {
		b.specs[t.Name] = t
	}
	var params int64
	// The program options are checked whether or not programs are generated, so that a bundle
	// packed with --no-ane refuses what one with programs would.
	if err := b.milOpts.Check(); err != nil {
		return nil, err
	}
	blobs, err := blobplan.Blobs(b.cfg, b.milOpts.Blobs)
	if err != nil {
		return nil, err
	}
	for _, t := range specs {
		params += int64(arch.Elements(t.Shape))
		b.order = append(b.order, t.Name)
		if isSmall(t, b.cfg) {
			b.total += int64(arch.Elements(t.Shape)) * int64(b.storeDType(t).Size())
		}
	}
	for _, s := range blobs {
		for _, e := range s.Entries() {
			b.total += e.Size
		}
	}

	// The source files, verbatim (provenance; `anepack inspect --json` and later tools read them).
	files := append([]namedFile{{ConfigFile, src.configJSON}, {GenerationConfigFile, src.genJSON}}, src.tokenizerFiles()...)
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if _, err := b.w.Add(format.KindFile, FilePrefix+f.name, f.data); err != nil {
			return nil, err
		}
	}
	if err := tok.failed(); err != nil {
		return nil, err
	}
	if err := b.writeSmallTensors(specs); err != nil {
		return nil, err
	}
	placed := make(map[blobplan.Key]blobplan.Placement, len(blobs))
	for _, spec := range blobs {
		if err := tok.failed(); err != nil {
			return nil, err
		}
		p, err := b.writeBlob(spec)
		if err != nil {
			return nil, err
		}
		placed[spec.Key] = p
	}
	tables, tokInfo, err := tok.wait()
	if err != nil {
		return nil, err
	}
	if _, err := b.w.Add(format.KindTokenizer, TokenizerSection, tables); err != nil {
		return nil, err
	}
	var programs []format.Program
	var ane *format.ANE
	if !b.noPrograms {
		if programs, err = b.writePrograms(placed); err != nil {
			return nil, err
		}
		ane = &format.ANE{LMHeadRows: b.milOpts.Blobs.MaxLMHeadRows, Seqs: programSeqs(programs)}
		if ane.LMHeadRows == 0 {
			ane.LMHeadRows = blobplan.DefaultLMHeadRows
		}
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
			DType:        b.target.String(),
			GroupSize:    b.groupSize(),
			Parameters:   params,
		},
		Tokenizer: &format.Tokenizer{Section: TokenizerSection, Info: tokInfo},
		Programs:  programs,
		ANE:       ane,
	}
	for _, n := range b.order {
		if v := b.views[n]; v != nil {
			m.Tensors = append(m.Tensors, *v)
		}
	}
	return m, nil
}

// groupSize is the bundle's q4 group size, 0 for other types.
func (b *builder) groupSize() int {
	if b.target != dtype.Q4 {
		return 0
	}
	if b.milOpts.Blobs.GroupSize == 0 {
		return blobplan.DefaultGroupSize
	}
	return b.milOpts.Blobs.GroupSize
}

// storeDType is the dtype a tensor is stored in: norms, biases, other small parameters
// (arch.RoleParam) and routers always F32, embeddings always FP16 (a lookup reads one row per
// token, so F32 would only double the size), linear and expert weights (including a separate
// LM head) in the requested type.
func (b *builder) storeDType(t arch.Tensor) dtype.DType {
	switch t.Role {
	case arch.RoleNorm, arch.RoleBias, arch.RoleParam, arch.RoleRouter:
		return dtype.F32
	case arch.RoleEmbedding:
		return dtype.F16
	}
	return b.target
}

// writeTensor converts ref into w and reports progress; it drops the source pages afterwards.
// A weight the checkpoint stores [in, out] (arch.Tensor.Transposed) is written transposed.
func (b *builder) writeTensor(w io.Writer, ref *convert.TensorRef, dt dtype.DType, transposed bool) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	write := b.conv.WriteTensor
	if transposed {
		write = b.conv.WriteTensorTransposed
	}
	if err := write(w, ref, dt); err != nil {
		return fmt.Errorf("writing %s: %w", ref.Name, err)
	}
	b.ckpt.Done(ref)
	b.done += convert.OutputSize(ref, dt)
	if b.progress != nil {
		b.progress(b.done, b.total)
	}
	return nil
}

// writeRaw writes already-converted bytes and reports progress.
func (b *builder) writeRaw(w io.Writer, p []byte) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if _, err := w.Write(p); err != nil {
		return err
	}
	b.done += int64(len(p))
	if b.progress != nil {
		b.progress(b.done, b.total)
	}
	return nil
}

// isSmall reports whether a tensor lives in the tensors section rather than in an ANE blob:
// norms, biases, other small parameters, routers, position embeddings, and the token
// embedding when it is not tied to the LM head.
func isSmall(t arch.Tensor, cfg *arch.Config) bool {
	tiedHead := t.Slot == arch.EmbedTokens && cfg.TieWordEmbeddings
	switch t.Role {
	case arch.RoleNorm, arch.RoleBias, arch.RoleParam, arch.RoleRouter:
		return true
	}
	return t.Role == arch.RoleEmbedding && !tiedHead
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
		if !isSmall(t, b.cfg) {
			continue
		}
		if err := cw.pad(64); err != nil {
			return err
		}
		ref := b.ckpt.Tensor(t.Name)
		dt := b.storeDType(t)
		off := cw.n
		if q := b.ckpt.MLX4(t.Name); q != nil {
			var buf bytes.Buffer
			if err := b.writeMLXDense(&buf, q, b.milOpts.Blobs.GroupSize); err != nil {
				return err
			}
			if err := b.writeRaw(cw, buf.Bytes()); err != nil {
				return err
			}
		} else if err := b.writeTensor(cw, ref, dt, t.Transposed); err != nil {
			return err
		}
		b.views[t.Name] = &format.Tensor{Name: t.Name, DType: dt.String(), Shape: t.Shape,
			Parts: []format.TensorPart{{Section: TensorsSection, Offset: off, Rows: t.Shape[0], Size: cw.n - off}}}
	}
	_, err = b.w.End()
	return err
}

// blobSection names the bundle section holding one ANE weight blob file.
func blobSection(s blobplan.Blob) string {
	if s.Key.Group == arch.GroupLMHead {
		return fmt.Sprintf("%slm_head.%d", BlobPrefix, s.Key.Chunk)
	}
	return fmt.Sprintf("%slayers.%d.%s", BlobPrefix, s.Key.Layer, s.Key.Group)
}

// recordSources returns the checkpoint tensors (or row ranges of one) forming a record's payload.
func (b *builder) recordSources(r blobplan.RecordSpec) ([]*convert.TensorRef, error) {
	var refs []*convert.TensorRef
	for _, name := range r.Tensors {
		ref := b.ckpt.Tensor(name)
		if ref == nil {
			return nil, fmt.Errorf("blob record %s: tensor %s is missing", r.Name, name)
		}
		if r.RowEnd > 0 {
			part := *ref
			rowBytes := len(ref.Data) / ref.Shape[0]
			part.Data = ref.Data[r.RowStart*rowBytes : r.RowEnd*rowBytes]
			part.Shape = append([]int{r.RowEnd - r.RowStart}, ref.Shape[1:]...)
			ref = &part
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// writeBlob writes one BLOBFILE section with the records mil laid out for it, and points the
// tensor views of the weights at their payloads (the CPU reads the same bytes in place). Bias
// records are ANE-only FP16 copies; the CPU keeps the F32 biases of the tensors section.
func (b *builder) writeBlob(spec blobplan.Blob) (blobplan.Placement, error) {
	section := blobSection(spec)
	sources := make([][]*convert.TensorRef, len(spec.Records))
	for i, r := range spec.Records {
		refs, err := b.recordSources(r)
		if err != nil {
			return blobplan.Placement{}, err
		}
		sources[i] = refs
	}
	sw, err := b.w.Begin(format.KindBlob, section)
	if err != nil {
		return blobplan.Placement{}, err
	}
	bw, err := blobfile.NewWriter(sw, spec.Entries())
	if err != nil {
		return blobplan.Placement{}, err
	}
	var q *quantized // the weight whose parts are being written
	for i, r := range spec.Records {
		rec, err := bw.Next()
		if err != nil {
			return blobplan.Placement{}, err
		}
		name := r.View
		if name == "" {
			name = r.Tensors[0]
		}
		spec := b.specs[name]
		// LM-head chunks (RowEnd > 0) are row ranges of an embedding, never transposed.
		transposed := spec.Transposed && r.RowEnd == 0
		switch {
		case r.Part == blobplan.PartData:
			if mq := b.ckpt.MLX4(r.Tensors[0]); mq != nil && len(sources[i]) == 1 {
				q, err = fromMLX(mq, r.Group, r.RowStart, r.RowEnd) // the checkpoint's own codes
				if err == nil {
					err = q.writeData(func(p []byte) error { return b.writeRaw(bw, p) })
				}
			} else {
				q, err = b.writeQuantized(bw, sources[i], transposed, r.Quant, r.Group)
			}
			if err != nil {
				return blobplan.Placement{}, err
			}
		case r.Part != "":
			if err := b.writeRaw(bw, q.part(r.Part)); err != nil {
				return blobplan.Placement{}, err
			}
		default:
			for _, ref := range sources[i] {
				if err := b.writeTensor(bw, ref, r.DType, transposed); err != nil {
					return blobplan.Placement{}, err
				}
			}
		}
		if r.Bias {
			continue // an ANE-only fp16 copy; the CPU reads the F32 biases of the tensors section
		}
		v := b.views[name]
		if v == nil {
			dt := r.DType
			if r.Quant != dtype.Invalid {
				dt = r.Quant
			}
			v = &format.Tensor{Name: name, DType: dt.String(), Shape: spec.Shape, Transposed: spec.Transposed, GroupSize: r.Group}
			b.views[name] = v
		}
		part := format.TensorPart{Section: section, Offset: rec.DataOffset, Rows: r.Shape[0], Size: rec.Size}
		switch r.Part {
		case blobplan.PartScale:
			v.Scales = append(v.Scales, part)
		case blobplan.PartOffset:
			v.Offsets = append(v.Offsets, part)
		default:
			v.Parts = append(v.Parts, part)
		}
	}
	if err := bw.Close(); err != nil {
		return blobplan.Placement{}, err
	}
	if _, err := b.w.End(); err != nil {
		return blobplan.Placement{}, err
	}
	return blobplan.Placement{Section: section, Records: bw.Records()}, nil
}

// writePrograms generates the MIL programs for the placed blobs and stores their texts in one
// MIL section (each program is a byte range of it: one 16 KiB-aligned section per program
// would add 16 KiB of padding to each of hundreds of small texts).
func (b *builder) writePrograms(placed map[blobplan.Key]blobplan.Placement) ([]format.Program, error) {
	progs, err := milgen.Programs(b.cfg, b.milOpts, placed)
	if err != nil {
		return nil, err
	}
	sw, err := b.w.Begin(format.KindMIL, MILSection)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: sw}
	out := make([]format.Program, 0, len(progs))
	for _, p := range progs {
		off := cw.n
		if _, err := io.WriteString(cw, p.Text); err != nil {
			return nil, err
		}
		k := p.Program
		k.MIL, k.MILOffset, k.MILSize = MILSection, off, cw.n-off
		out = append(out, k)
	}
	if _, err := b.w.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// programSeqs lists the buckets of the layer programs, ascending.
func programSeqs(progs []format.Program) []int {
	var seqs []int
	for _, k := range progs {
		if k.Kind != arch.GroupLMHead && !slices.Contains(seqs, k.Seq) {
			seqs = append(seqs, k.Seq)
		}
	}
	slices.Sort(seqs)
	return seqs
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
