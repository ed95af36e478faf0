package runtime

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// Projector computes the linear layers of the forward pass for one sequence: the family's fused
// groups (arch.Family.Groups) and the LM head. A backend supplies it; the Decoder does
// everything else. A Projector is used by one goroutine at a time and owns whatever scratch its
// products need, so that a decode step allocates nothing.
type Projector interface {
	// Group computes group g (an index into the family's Groups) of layer for n tokens: x is
	// [n, In] row-major and y [n, Out]: the members' outputs side by side with their biases
	// added, or the MLP block's output.
	Group(layer, g int, x []float32, n int, y []float32) error
	// LMHead writes the logits [n, vocab] of the final-normed hidden states x [n, hidden].
	LMHead(x []float32, n int, logits []float32) error
}

// Projections is a backend's share of the forward pass: it makes one Projector per sequence,
// for batches of up to batch tokens.
type Projections interface {
	NewProjector(batch int) (Projector, error)
}

// DecoderOptions configures a Decoder.
type DecoderOptions struct {
	// Name is the backend's name ("cpu", "ane", "sim"), for Backend.Name and messages.
	Name string
	// Pool runs attention (and any other work the decoder splits over cores).
	Pool *kernels.Pool
	// Batch is the most tokens one pass processes; longer inputs run in chunks of Batch.
	Batch int
	// WrapError, if set, turns a projector's error into the one Forward returns (the ANE
	// backend adds advice to a compile-budget failure); nil prefixes the backend's name.
	WrapError func(error) error
}

// Decoder is the forward pass of every architecture (see arch.Family), in Hugging Face's order
// of operations, over a backend's Projections. It reads the tensors the projections do not:
// the embedding, the norms and the per-head q/k norms. It implements Backend's NewState and
// Name; a backend embeds it and adds Close. It is safe for concurrent use by states.
type Decoder struct {
	name    string
	m       *Model
	cfg     *arch.Config
	proj    Projections
	pool    *kernels.Pool
	batch   int
	wrap    func(error) error
	gQKV    int // indices of the groups in the family's Groups
	gO      int
	gMLP    int
	norm    func(dst, x, w []float32, eps float32)
	invFreq []float32
	scale   float32 // attention score scale

	embed     Matrix
	layers    []decoderLayer
	finalNorm []float32
}

// decoderLayer holds the vectors of one layer the decoder applies itself; nil where the family
// has none.
type decoderLayer struct {
	inputNorm, qNorm, kNorm, postAttnNorm, mlpNorm, postMLPNorm []float32
}

// NewDecoder prepares the forward pass of m over proj.
func NewDecoder(m *Model, proj Projections, opts DecoderOptions) (*Decoder, error) {
	if opts.Pool == nil || opts.Batch <= 0 {
		return nil, fmt.Errorf("runtime: NewDecoder needs a pool and a positive batch (have %d)", opts.Batch)
	}
	c, fam := m.Config, m.Family
	d := &Decoder{name: opts.Name, m: m, cfg: c, proj: proj, pool: opts.Pool, batch: opts.Batch, wrap: opts.WrapError,
		gQKV: -1, gO: -1, gMLP: -1, invFreq: invFreq(c),
		// HF's scaling = head_dim**-0.5, applied to the float32 scores as a float32 scalar.
		scale: float32(1 / math.Sqrt(float64(c.HeadDim)))}
	if d.wrap == nil {
		d.wrap = func(err error) error { return fmt.Errorf("%s: %w", opts.Name, err) }
	}
	for i, g := range fam.Groups(c) {
		switch g.Name {
		case arch.GroupQKV:
			d.gQKV = i
		case arch.GroupO:
			d.gO = i
		case arch.GroupMLP:
			d.gMLP = i
		}
	}
	if d.gQKV < 0 || d.gO < 0 || d.gMLP < 0 {
		return nil, fmt.Errorf("%s: the decoder needs the %s, %s and %s groups", m.Name, arch.GroupQKV, arch.GroupO, arch.GroupMLP)
	}
	switch fam.Norm {
	case arch.RMSNorm:
		d.norm = kernels.RMSNorm
	case arch.RMSNormPlusOne:
		d.norm = kernels.RMSNormPlusOne
	default:
		return nil, fmt.Errorf("%s: norm kind %d is not implemented", m.Name, fam.Norm)
	}
	var err error
	if d.embed, err = m.Matrix(arch.EmbedTokens, -1); err != nil {
		return nil, err
	}
	if d.finalNorm, err = m.Vector(arch.FinalNorm, -1); err != nil {
		return nil, err
	}
	d.layers = make([]decoderLayer, c.NumHiddenLayers)
	for l := range d.layers {
		L := &d.layers[l]
		for _, v := range []struct {
			dst  *[]float32
			slot arch.Slot
		}{{&L.inputNorm, arch.InputNorm}, {&L.qNorm, arch.QNorm}, {&L.kNorm, arch.KNorm},
			{&L.postAttnNorm, arch.PostAttnNorm}, {&L.mlpNorm, arch.MLPNorm}, {&L.postMLPNorm, arch.PostMLPNorm}} {
			if *v.dst, err = m.Vector(v.slot, l); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// Name returns the backend's name.
func (d *Decoder) Name() string { return d.name }

// Model returns the decoder's model.
func (d *Decoder) Model() *Model { return d.m }

// NewState allocates a KV cache of maxTokens positions, the activations of one batch and the
// backend's projector. The cache is allocated, not touched: the operating system provides its
// pages as positions are first written, so a large context costs address space, not memory,
// until it is used.
func (d *Decoder) NewState(maxTokens int) (State, error) {
	c := d.cfg
	if maxTokens <= 0 || maxTokens > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context of %d tokens: expected 1 to %d (the model's max_position_embeddings)", maxTokens, c.MaxPositionEmbeddings)
	}
	batch := min(d.batch, maxTokens)
	p, err := d.proj.NewProjector(batch)
	if err != nil {
		return nil, err
	}
	q, kv, h := c.QDim(), c.KVDim(), c.HiddenSize
	cache := c.NumHiddenLayers * kv * maxTokens
	return &decoderState{
		d: d, proj: p, maxTokens: maxTokens, batch: batch, eps: float32(c.RMSNormEps),
		keys: make([]float32, cache), values: make([]float32, cache),
		x: make([]float32, batch*h), xn: make([]float32, batch*h), tmp: make([]float32, batch*h),
		qkv:  make([]float32, batch*(q+2*kv)),
		att:  make([]float32, batch*q),
		rope: kernels.NewRope(d.invFreq, maxTokens),
		attn: kernels.NewAttention(d.pool, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, maxTokens, d.scale),
	}, nil
}
