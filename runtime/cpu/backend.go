package cpu

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// Options configures the CPU backend.
type Options struct {
	// Threads is the number of cores the matrix products use; 0 means all of them.
	Threads int
	// Batch is the most tokens one pass of the network processes at once (longer prompts are
	// prefilled in chunks of Batch tokens); 0 means DefaultBatch. It sizes the activations.
	Batch int
}

// DefaultBatch is the default prefill chunk: large enough that each weight matrix is streamed
// once for many tokens, small enough that the activations stay in the caches.
const DefaultBatch = 128

// Backend runs Qwen2 models on the CPU. It implements runtime.Backend.
type Backend struct {
	cfg   *arch.Config
	w     *weights
	pool  *kernels.Pool
	batch int
}

// New prepares the CPU backend for m: it resolves the weights to views of the mapping (nothing
// is copied) and starts Threads-1 worker goroutines.
func New(m *runtime.Model, opts Options) (*Backend, error) {
	if m.Config.Architecture != "Qwen2ForCausalLM" {
		return nil, fmt.Errorf("%s: the CPU backend runs Qwen2ForCausalLM, not %q", m.Name, m.Config.Architecture)
	}
	if opts.Threads < 0 {
		return nil, fmt.Errorf("threads is %d; expected 0 (all cores) or a positive number", opts.Threads)
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("batch is %d; expected 0 (default) or a positive number", opts.Batch)
	}
	w, err := loadWeights(m)
	if err != nil {
		return nil, err
	}
	if len(w.lmHead) > maxOutputs {
		return nil, fmt.Errorf("%s: the LM head has %d row chunks; the CPU backend handles at most %d", m.Name, len(w.lmHead), maxOutputs)
	}
	batch := opts.Batch
	if batch == 0 {
		batch = DefaultBatch
	}
	return &Backend{cfg: m.Config, w: w, pool: kernels.NewPool(opts.Threads), batch: batch}, nil
}

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Threads returns the number of cores the backend uses.
func (b *Backend) Threads() int { return b.pool.Threads() }

// Close stops the worker goroutines.
func (b *Backend) Close() error {
	b.pool.Close()
	return nil
}

// NewState allocates a KV cache of maxTokens positions and the activations of one batch.
// The cache is allocated, not touched: the operating system provides its pages as positions
// are first written, so a large --ctx costs address space, not memory, until it is used.
func (b *Backend) NewState(maxTokens int) (runtime.State, error) {
	c := b.cfg
	if maxTokens <= 0 || maxTokens > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context of %d tokens: expected 1 to %d (the model's max_position_embeddings)", maxTokens, c.MaxPositionEmbeddings)
	}
	batch := min(b.batch, maxTokens)
	qd, kvd := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	cache := c.NumHiddenLayers * kvd * maxTokens
	s := &State{
		cfg: c, w: b.w, maxTokens: maxTokens, batch: batch,
		eps:    float32(c.RMSNormEps),
		keys:   make([]float32, cache),
		values: make([]float32, cache),
		x:      make([]float32, batch*c.HiddenSize),
		xn:     make([]float32, batch*c.HiddenSize),
		tmp:    make([]float32, batch*c.HiddenSize),
		q:      make([]float32, batch*qd),
		k:      make([]float32, batch*kvd),
		v:      make([]float32, batch*kvd),
		att:    make([]float32, batch*qd),
		mlp:    make([]float32, batch*c.IntermediateSize),
		rope:   kernels.NewRope(c.RopeTheta, c.HeadDim, maxTokens),
		lin:    newDispatch(b.pool, batch),
		// HF's scaling = head_dim**-0.5, applied to the float32 scores as a float32 scalar.
		attn: kernels.NewAttention(b.pool, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, maxTokens,
			float32(1/math.Sqrt(float64(c.HeadDim)))),
	}
	return s, nil
}
