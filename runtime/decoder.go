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
	// Experts computes the routed experts of layer's sparse MLP block, group g (the family's
	// experts group), for n tokens: x is [n, In] and y [n, Out], y[t] = Σ_j Weight[t·K+j] ·
	// expert Expert[t·K+j]'s MLP of x[t]. It reads only the chosen experts' weights, each
	// once for all the tokens that chose it (r's by-expert order).
	Experts(layer, g int, x []float32, n int, r *Routes, y []float32) error
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
	// Cache is the KV cache's element type: CacheF32 (the zero value) or CacheF16.
	Cache CacheType
	// WrapError, if set, turns a projector's error into the one Forward returns (the ANE
	// backend adds advice to a compile-budget failure); nil prefixes the backend's name.
	WrapError func(error) error
}

// Decoder is the forward pass of every architecture (see arch.Family), in Hugging Face's order
// of operations, over a backend's Projections. It reads the tensors the projections do not:
// the embedding, the norms and the per-head q/k norms. It implements Backend's NewState and
// Name; a backend embeds it and adds Close. It is safe for concurrent use by states.
type Decoder struct {
	name     string
	m        *Model
	cfg      *arch.Config
	proj     Projections
	pool     *kernels.Pool
	batch    int
	cache    CacheType
	wrap     func(error) error
	gQKV     int // indices of the groups in the family's Groups; -1 where no layer has it
	gO       int
	gLinIn   int
	gLinOut  int
	gMLP     int
	gExperts int
	qkvOut   int  // the attn_qkv group's width: q_proj's rows (with the gates) + k + v
	linInOut int  // the linear_attn_in group's width: qkv + z + b + a
	gated    bool // attention's output gate (q_proj interleaves each head's query and gate)
	norm     arch.NormKind
	eps      float32   // the norms' epsilon
	rotary   bool      // RoPE (else learned position embeddings)
	prenorm  bool      // norms before attention and the MLP (else the blocks read x itself: OLMo)
	invFreq  []float32 // RoPE frequencies of the full-attention layers
	local    []float32 // and of the sliding-window layers (nil when there are none)
	scale    float32   // attention score scale
	window   int       // sliding window of the sliding layers

	embed      *embedding
	embedScale float32    // multiplies the embedding when not 0 (Gemma: sqrt(hidden))
	posEmbed   *embedding // learned position embeddings (GPT-2)
	layers     []decoderLayer
	finalNorm  norm
}

// norm is one norm's weight and, for LayerNorm, its bias.
type norm struct{ w, b []float32 }

// decoderLayer holds the vectors of one layer the decoder applies itself; nil where the family
// has none.
type decoderLayer struct {
	inputNorm, postAttnNorm, mlpNorm, postMLPNorm norm
	qNorm, kNorm                                  []float32
	sliding                                       bool
	noRope                                        bool // attends without RoPE (SmolLM3's NoPE layers)
	// linear, when set, makes the layer's token mixer a Gated DeltaNet (deltanet.go) instead
	// of attention.
	linear *deltaNetLayer
	// router, when set, makes the layer's MLP the sparse block of experts (experts.go): the
	// router's weight [experts, hidden], float32.
	router []float32
}

// NewDecoder prepares the forward pass of m over proj.
func NewDecoder(m *Model, proj Projections, opts DecoderOptions) (*Decoder, error) {
	if opts.Pool == nil || opts.Batch <= 0 {
		return nil, fmt.Errorf("runtime: NewDecoder needs a pool and a positive batch (have %d)", opts.Batch)
	}
	if !opts.Cache.valid() {
		return nil, fmt.Errorf("KV cache type is %d; expected CacheF32 or CacheF16", int(opts.Cache))
	}
	c, fam := m.Config, m.Family
	d := &Decoder{name: opts.Name, m: m, cfg: c, proj: proj, pool: opts.Pool, batch: opts.Batch, cache: opts.Cache, wrap: opts.WrapError,
		gQKV: -1, gO: -1, gLinIn: -1, gLinOut: -1, gMLP: -1, gExperts: -1, gated: fam.AttnOutputGate,
		norm: fam.Norm, eps: float32(c.RMSNormEps), rotary: fam.Positions == arch.RotaryPositions, prenorm: !fam.PostNormsOnly,
		// HF's scaling (head_dim**-0.5, or Gemma's query_pre_attn_scalar**-0.5), applied to
		// the float32 scores as a float32 scalar.
		scale: float32(c.AttentionScale()), window: c.SlidingWindow}
	if d.rotary {
		d.invFreq = invFreq(c)
	}
	if d.wrap == nil {
		d.wrap = func(err error) error { return fmt.Errorf("%s: %w", opts.Name, err) }
	}
	for i, g := range fam.Groups(c) {
		switch g.Name {
		case arch.GroupQKV:
			d.gQKV, d.qkvOut = i, g.Out
		case arch.GroupO:
			d.gO = i
		case arch.GroupLinearIn:
			d.gLinIn, d.linInOut = i, g.Out
		case arch.GroupLinearOut:
			d.gLinOut = i
		case arch.GroupMLP:
			d.gMLP = i
		case arch.GroupExperts:
			d.gExperts = i
		}
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		need := [3]int{d.gQKV, d.gO, d.gMLP}
		if c.LinearLayer(l) {
			need[0], need[1] = d.gLinIn, d.gLinOut
		}
		if c.SparseLayer(l) {
			need[2] = d.gExperts
		}
		if need[0] < 0 || need[1] < 0 || need[2] < 0 {
			return nil, fmt.Errorf("%s: layer %d lacks its token mixer's groups or its MLP's", m.Name, l)
		}
	}
	if err := checkExperts(m); err != nil {
		return nil, err
	}
	if fam.Norm != arch.RMSNorm && fam.Norm != arch.RMSNormPlusOne && fam.Norm != arch.LayerNorm {
		return nil, fmt.Errorf("%s: norm kind %d is not implemented", m.Name, fam.Norm)
	}
	if fam.ScaleEmbedding {
		// HF multiplies by a float32 tensor holding hidden_size**0.5.
		d.embedScale = float32(math.Sqrt(float64(c.HiddenSize)))
	}
	var err error
	if d.embed, err = m.embedding(arch.EmbedTokens); err != nil {
		return nil, err
	}
	if m.Has(arch.PosEmbed) {
		if d.posEmbed, err = m.embedding(arch.PosEmbed); err != nil {
			return nil, err
		}
	}
	vec := func(s arch.Slot, layer int) []float32 {
		var v []float32
		if err == nil {
			v, err = m.Vector(s, layer)
		}
		return v
	}
	d.finalNorm = norm{vec(arch.FinalNorm, -1), vec(arch.FinalNormBias, -1)}
	d.layers = make([]decoderLayer, c.NumHiddenLayers)
	linear := 0 // DeltaNet layers so far
	for l := range d.layers {
		L := &d.layers[l]
		L.inputNorm = norm{vec(arch.InputNorm, l), vec(arch.InputNormBias, l)}
		L.postAttnNorm = norm{vec(arch.PostAttnNorm, l), nil}
		L.mlpNorm = norm{vec(arch.MLPNorm, l), vec(arch.MLPNormBias, l)}
		L.postMLPNorm = norm{vec(arch.PostMLPNorm, l), nil}
		L.qNorm, L.kNorm = vec(arch.QNorm, l), vec(arch.KNorm, l)
		if c.LinearLayer(l) && err == nil {
			L.linear, err = newDeltaNetLayer(m, l, linear)
			linear++
		}
		L.noRope = !c.RopeLayer(l)
		if c.SparseLayer(l) {
			L.router = vec(arch.Router, l)
		}
		if L.sliding = c.Sliding(l); L.sliding && d.local == nil {
			// Sliding layers rotate with their own base and the default frequencies.
			d.local = kernels.DefaultInvFreq(c.RopeLocalTheta, c.RotaryDim())
		}
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Name returns the backend's name.
func (d *Decoder) Name() string { return d.name }

// Model returns the decoder's model.
func (d *Decoder) Model() *Model { return d.m }

// NewState allocates a KV cache of maxTokens positions for the attention layers, the fixed-size
// recurrent state of the Gated DeltaNet layers, the activations of one batch and the backend's
// projector. The cache is allocated, not touched: the operating system provides its pages as
// positions are first written. Everything is first sized against the memory the process can
// still take (memory.go): a context it has no room for is refused with the sizes, not met with
// a fatal "out of memory".
func (d *Decoder) NewState(maxTokens int) (State, error) {
	c := d.cfg
	if maxTokens <= 0 || maxTokens > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context of %d tokens: expected 1 to %d (the model's max_position_embeddings)", maxTokens, c.MaxPositionEmbeddings)
	}
	if err := d.checkStateMemory(maxTokens); err != nil {
		return nil, err
	}
	batch := min(d.batch, maxTokens)
	ws, err := d.newWorkspace(batch)
	if err != nil {
		return nil, err
	}
	s := &decoderState{d: d, ws: ws, maxTokens: maxTokens, batch: batch,
		base: make([]int, c.NumHiddenLayers), capacity: make([]int, c.NumHiddenLayers)}
	kv := c.KVDim()
	if d.gQKV >= 0 {
		s.attn = kernels.NewAttention(d.pool, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, maxTokens, d.scale)
	}
	if d.gLinIn >= 0 {
		s.lin = newLinearState(d, batch)
	}
	// A full-attention layer caches every position; a sliding layer a ring holding its window
	// plus a batch (so writing a batch overwrites nothing its queries read) plus a batch more
	// (so a session can step back that far and continue, see ResumeAt); a Gated DeltaNet layer
	// nothing (its state is s.lin's).
	cache := 0
	for l, L := range d.layers {
		s.capacity[l] = maxTokens
		switch {
		case L.linear != nil:
			s.capacity[l] = 0
		case L.sliding:
			s.capacity[l] = min(maxTokens, d.window+2*batch)
		}
		s.base[l] = cache
		cache += kv * s.capacity[l]
	}
	if d.cache == CacheF16 {
		s.keys16, s.values16 = make([]uint16, cache), make([]uint16, cache)
	} else {
		s.keys, s.values = make([]float32, cache), make([]float32, cache)
	}
	if d.rotary {
		s.rope = kernels.NewRope(d.invFreq, maxTokens)
		if d.local != nil {
			s.ropeLocal = kernels.NewRope(d.local, maxTokens)
		}
	}
	return s, nil
}
