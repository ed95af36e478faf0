package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/quant"
	"github.com/anepack/anepack/tokenizer"
)

// Model is a model in an open bundle: its validated architecture config and family, generation
// defaults and a zero-copy view of every tensor. Nothing is copied out of the mapping: a Model
// costs a few kilobytes of heap whatever the model's size. It is immutable and safe for
// concurrent use; it is valid until the bundle is closed.
type Model struct {
	// Name is the bundle's path (or the manifest's model name), for messages.
	Name string
	// Config is the architecture config stored in the manifest, validated.
	Config *arch.Config
	// Family is the architecture's description.
	Family *arch.Family
	// DType is the storage type of the linear weights.
	DType    dtype.DType
	bundle   *format.Bundle
	manifest *format.Manifest
	tensors  map[string]*Tensor

	tokOnce sync.Once
	tok     *tokenizer.Tokenizer
	tokErr  error
}

// Tensor is a view of one tensor's bytes inside the bundle's mapping.
type Tensor struct {
	Name  string
	DType dtype.DType
	Shape []int // row-major; [out, in] for linear weights
	// Parts hold the tensor's rows in order; most tensors have one part, the LM head (or the
	// tied embedding) one per ANE-sized chunk of rows. A quantized tensor's parts hold its
	// codes, and each part has its Scale (and, for q4, Offset) bytes: fp16 values, one per row
	// (q8) or per row and group of Group inputs (q4), or E8M0 bytes, one per row and block of
	// Group = 32 inputs (mxfp4).
	Parts []TensorPart
	Group int
}

// TensorPart is a run of whole rows of a tensor.
type TensorPart struct {
	Rows          int
	Data          []byte // Rows * row size bytes, aligned to the element size
	Scale, Offset []byte // a quantized part's fp16 scales and offsets, or mxfp4's E8M0 scales
}

// F16 returns the part's elements as fp16 bit patterns, without copying.
// The caller has checked that the tensor's DType is dtype.F16.
func (p TensorPart) F16() []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(p.Data))), len(p.Data)/2)
}

// F32 returns the part's elements as float32 values, without copying.
// The caller has checked that the tensor's DType is dtype.F32.
func (p TensorPart) F32() []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(p.Data))), len(p.Data)/4)
}

// Int8 returns a q8 part's codes, without copying.
// The caller has checked that the tensor's DType is dtype.Q8.
func (p TensorPart) Int8() []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(p.Data))), len(p.Data))
}

// Scales returns a quantized part's fp16 scales as bit patterns, without copying (aligned:
// NewModel checks every section).
func (p TensorPart) Scales() []uint16 { return u16s(p.Scale) }

// Offsets returns a q4 part's fp16 offsets as bit patterns, without copying.
func (p TensorPart) Offsets() []uint16 { return u16s(p.Offset) }

// u16s views fp16 bytes of the mapping as uint16s.
func u16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// Cols returns the size of the tensor's last dimension (1 for a scalar).
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

// Open opens the bundle at path with format.Open (a read-only memory mapping) and returns its
// model. Closing the model closes the bundle.
func Open(path string) (*Model, error) {
	b, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := NewModel(b, path)
	if err != nil {
		b.Close()
		return nil, err
	}
	return m, nil
}

// Close closes the bundle. Slices from the model's tensors must not be used afterwards.
func (m *Model) Close() error { return m.bundle.Close() }

// Bundle returns the open bundle the model reads from.
func (m *Model) Bundle() *format.Bundle { return m.bundle }

// Manifest returns the bundle's manifest. It is shared: callers must not modify it.
func (m *Model) Manifest() *format.Manifest { return m.manifest }

// Generation returns the generation defaults recorded at pack time (from generation_config.json).
func (m *Model) Generation() format.Generation { return m.manifest.Generation }

// Tokenizer returns the bundle's tokenizer, loaded on first use from its compiled tables
// (zero-copy: the tables stay in the mapping).
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	m.tokOnce.Do(func() {
		t := m.manifest.Tokenizer
		if t == nil || t.Section == "" {
			m.tokErr = fmt.Errorf("%s: the manifest has no tokenizer section", m.Name)
			return
		}
		sec, ok := m.bundle.Section(t.Section)
		if !ok {
			m.tokErr = fmt.Errorf("%s: manifest field tokenizer.section names %q, which is not in the bundle", m.Name, t.Section)
			return
		}
		data, err := m.bundle.Bytes(sec)
		if err != nil {
			m.tokErr = fmt.Errorf("%s: tokenizer: %w", m.Name, err)
			return
		}
		if m.tok, err = tokenizer.Load(data); err != nil {
			m.tokErr = fmt.Errorf("%s: tokenizer section %q: %w", m.Name, t.Section, err)
		}
	})
	return m.tok, m.tokErr
}

// EOSIDs returns the ids that end generation: the generation config's eos ids, or the
// tokenizer's end-of-sequence token when the config names none.
func (m *Model) EOSIDs() []int {
	if ids := m.manifest.Generation.EOSTokenIDs; len(ids) > 0 {
		return ids
	}
	if len(m.Config.EOSTokenIDs) > 0 {
		return m.Config.EOSTokenIDs
	}
	if tok, err := m.Tokenizer(); err == nil && tok.EOS() >= 0 {
		return []int{tok.EOS()}
	}
	return nil
}

// Tensor returns the tensor called name (a Hugging Face name), or an error naming the bundle
// and the tensor.
func (m *Model) Tensor(name string) (*Tensor, error) {
	t, ok := m.tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: the manifest has no tensor %q", m.Name, name)
	}
	return t, nil
}

// TensorOf returns the tensor in slot s (of layer, for per-layer slots).
func (m *Model) TensorOf(s arch.Slot, layer int) (*Tensor, error) {
	return m.Tensor(m.Family.TensorName(s, layer))
}

// Has reports whether the model's family and config give it a tensor in slot s.
func (m *Model) Has(s arch.Slot) bool { return m.Family.Has(m.Config, s) }

// HasIn reports whether layer (-1 for the model-level slots) has a tensor in slot s: a layer
// has the slots of its own token mixer only.
func (m *Model) HasIn(s arch.Slot, layer int) bool { return m.Family.HasIn(m.Config, s, layer) }

// Vector returns the one-part float32 tensor in slot s of layer (a norm weight, a bias or
// another small parameter, all its elements in a row), or nil when the layer has no tensor in
// that slot.
func (m *Model) Vector(s arch.Slot, layer int) ([]float32, error) {
	if s == arch.SlotNone || !m.HasIn(s, layer) {
		return nil, nil
	}
	t, err := m.TensorOf(s, layer)
	if err != nil {
		return nil, err
	}
	n := arch.Elements(t.Shape)
	if t.DType != dtype.F32 || len(t.Parts) != 1 || len(t.Parts[0].F32()) != n {
		return nil, fmt.Errorf("%s: tensor %q: expected %d float32 values in one part, got dtype %s in %d part(s)", m.Name, t.Name, n, t.DType, len(t.Parts))
	}
	return t.Parts[0].F32(), nil
}

// NewModel checks an open bundle's manifest and resolves every tensor the architecture needs to
// a view of the mapping. name is used in error messages (usually the bundle's path). It fails
// with a message naming the bundle, the field and what was expected when the architecture is
// not supported, the config is inconsistent or out of bounds, a tensor is missing or has the
// wrong shape, type or size, or a section reference is out of bounds. The manifest is not
// trusted: every size is checked against the bytes present before anything is allocated from it.
func NewModel(b *format.Bundle, name string) (*Model, error) {
	if !littleEndian() {
		return nil, fmt.Errorf("%s: bundles store little-endian numbers and this machine is big-endian", name)
	}
	man := b.Manifest()
	if name == "" {
		name = man.Model.Name
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	if !arch.IsSupported(man.Model.Architecture) {
		return nil, fail("manifest field model.architecture: %q is not supported by this version of anerun; supported: %s",
			man.Model.Architecture, strings.Join(arch.Supported(), ", "))
	}
	cfg := new(arch.Config)
	if err := json.Unmarshal(man.Model.Config, cfg); err != nil {
		return nil, fail("manifest field model.config: %v", err)
	}
	if cfg.Architecture != man.Model.Architecture {
		return nil, fail("manifest field model.config.architecture is %q but model.architecture is %q", cfg.Architecture, man.Model.Architecture)
	}
	if err := arch.Validate(cfg); err != nil {
		var ce *arch.ConfigError
		if errors.As(err, &ce) {
			return nil, fail("manifest field model.config.%s: %s", ce.Field, ce.Msg)
		}
		return nil, fail("manifest field model.config: %v", err)
	}
	dt, err := dtype.Parse(man.Model.DType)
	if err != nil || (dt != dtype.F16 && dt != dtype.F32 && !dt.Quantized()) {
		return nil, fail("manifest field model.dtype is %q; expected \"f16\", \"f32\", \"q8\" or \"q4\" (a newer anepack may have written another scheme)", man.Model.DType)
	}
	fam, err := arch.Lookup(cfg)
	if err != nil {
		return nil, fail("%v", err)
	}
	// arch.Validate bounds the layer count (a manifest claiming 2^40 layers is refused before
	// anything is allocated from it), so the tensor list below is at most a few MB; each
	// tensor is then checked against the bytes actually present.
	m := &Model{Name: name, Config: cfg, Family: fam, DType: dt, bundle: b, manifest: man,
		tensors: make(map[string]*Tensor, fam.TensorCount(cfg))}
	index := make(map[string]*format.Tensor, len(man.Tensors))
	for i := range man.Tensors {
		index[man.Tensors[i].Name] = &man.Tensors[i]
	}
	for _, spec := range fam.Tensors(cfg) {
		t, err := m.resolve(spec, index[spec.Name])
		if err != nil {
			return nil, fail("%v", err)
		}
		m.tensors[spec.Name] = t
	}
	return m, nil
}

// resolve finds spec's tensor in the manifest and checks it against the architecture: shape,
// dtype and every part's section, bounds, size and alignment.
func (m *Model) resolve(spec arch.Tensor, mt *format.Tensor) (*Tensor, error) {
	if mt == nil {
		return nil, fmt.Errorf("manifest has no tensor %q (%s)", spec.Name, spec.Role)
	}
	where := fmt.Sprintf("manifest tensor %q", spec.Name)
	if !slices.Equal(mt.Shape, spec.Shape) {
		return nil, fmt.Errorf("%s: shape is %v; the config implies %v", where, mt.Shape, spec.Shape)
	}
	dt, err := dtype.Parse(mt.DType)
	// Norms, biases and the other small parameters are float32. Matrices are f16 or f32 each,
	// or quantized: a bundle's model.dtype is that of its layers, while the (tied) embedding
	// that doubles as the ANE's LM head is FP16 in unquantized bundles and q8 in quantized ones.
	switch {
	case spec.Role == arch.RoleNorm || spec.Role == arch.RoleBias || spec.Role == arch.RoleParam || spec.Role == arch.RoleRouter:
		if err != nil || dt != dtype.F32 {
			return nil, fmt.Errorf("%s: dtype is %q; expected \"f32\"", where, mt.DType)
		}
	case err != nil || (dt != dtype.F16 && dt != dtype.F32 && !dt.Quantized()):
		return nil, fmt.Errorf("%s: dtype is %q; expected \"f16\", \"f32\", \"q8\" or \"q4\"", where, mt.DType)
	}
	// A stacked expert weight [experts, out, in] is a matrix of experts·out rows.
	specRows, cols := spec.Matrix()
	rowBytes := dt.Bytes(int64(cols))
	var sideCols int                   // scales (and offsets) per row of a quantized tensor
	sideSize, group := 2, mt.GroupSize // bytes per scale: fp16, or an E8M0 byte (mxfp4)
	switch dt {
	case dtype.Q8:
		sideCols = 1
	case dtype.Q4:
		// The kernels have exactly these group sizes and panic on any other: a bundle claiming
		// another is refused here, not on the first product (a server's engine goroutine).
		if quant.CheckGroup(cols, mt.GroupSize) != nil {
			return nil, fmt.Errorf("%s: group_size %d; expected 32, 64 or 128 dividing its %d columns", where, mt.GroupSize, cols)
		}
		sideCols = cols / mt.GroupSize
	case dtype.MXFP4:
		if cols%dtype.MXBlock != 0 {
			return nil, fmt.Errorf("%s: an mxfp4 tensor of %d columns; expected a multiple of %d", where, cols, dtype.MXBlock)
		}
		sideCols, sideSize, group = cols/dtype.MXBlock, 1, dtype.MXBlock
	}
	if len(mt.Parts) == 0 || len(mt.Parts) > specRows {
		return nil, fmt.Errorf("%s: has %d parts; expected 1 to %d", where, len(mt.Parts), specRows)
	}
	wantSide := 0
	if dt.Quantized() {
		wantSide = len(mt.Parts)
	}
	if len(mt.Scales) != wantSide || (dt == dtype.Q4) != (len(mt.Offsets) == wantSide && wantSide > 0) {
		return nil, fmt.Errorf("%s: %d scale and %d offset parts for %d parts of a %s tensor", where, len(mt.Scales), len(mt.Offsets), len(mt.Parts), dt)
	}
	t := &Tensor{Name: mt.Name, DType: dt, Shape: mt.Shape, Parts: make([]TensorPart, len(mt.Parts)), Group: group}
	rows := 0
	for i, p := range mt.Parts {
		pw := fmt.Sprintf("%s part %d", where, i)
		if p.Rows <= 0 || p.Rows > specRows {
			return nil, fmt.Errorf("%s: %d rows; expected 1 to %d", pw, p.Rows, specRows)
		}
		data, err := m.partBytes(pw, p, int64(p.Rows)*rowBytes, max(dt.Data().Size(), 1))
		if err != nil {
			return nil, err
		}
		t.Parts[i] = TensorPart{Rows: p.Rows, Data: data}
		if dt.Quantized() {
			side := int64(p.Rows) * int64(sideCols) * int64(sideSize)
			if mt.Scales[i].Rows != p.Rows {
				return nil, fmt.Errorf("%s scales: %d rows; the part has %d", pw, mt.Scales[i].Rows, p.Rows)
			}
			if t.Parts[i].Scale, err = m.partBytes(pw+" scales", mt.Scales[i], side, sideSize); err != nil {
				return nil, err
			}
			if dt == dtype.Q4 {
				if mt.Offsets[i].Rows != p.Rows {
					return nil, fmt.Errorf("%s offsets: %d rows; the part has %d", pw, mt.Offsets[i].Rows, p.Rows)
				}
				if t.Parts[i].Offset, err = m.partBytes(pw+" offsets", mt.Offsets[i], side, 2); err != nil {
					return nil, err
				}
			}
		}
		rows += p.Rows
	}
	if rows != specRows {
		return nil, fmt.Errorf("%s: parts hold %d rows; expected %d", where, rows, specRows)
	}
	return t, nil
}

// partBytes returns the bytes of one part after checking its size, its bounds in its section
// and its alignment.
func (m *Model) partBytes(where string, p format.TensorPart, size int64, align int) ([]byte, error) {
	if p.Size != size {
		return nil, fmt.Errorf("%s: %d bytes; expected %d for %d rows", where, p.Size, size, p.Rows)
	}
	sec, ok := m.bundle.Section(p.Section)
	if !ok {
		return nil, fmt.Errorf("%s: section %q is not in the bundle", where, p.Section)
	}
	if p.Offset < 0 || p.Offset > sec.Length || p.Size > sec.Length-p.Offset {
		return nil, fmt.Errorf("%s: bytes [%d, %d) are outside section %q of %d bytes", where, p.Offset, p.Offset+p.Size, p.Section, sec.Length)
	}
	data, err := m.bundle.Bytes(sec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	data = data[p.Offset : p.Offset+p.Size : p.Offset+p.Size]
	if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%uintptr(align) != 0 {
		return nil, fmt.Errorf("%s: offset %d in section %q is not aligned to %d bytes", where, p.Offset, p.Section, align)
	}
	return data, nil
}

// littleEndian reports whether this machine stores the low byte first, as bundles do.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
