package cpu

import (
	"fmt"

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
	// NoAMX keeps fp16 prefill products off AMX on a CPU that has it (kernels.UseAMX), for
	// comparison: they then run on the AVX-512 kernels.
	NoAMX bool

	// amxFor replaces kernels.UseAMX (tests: every prefill on the AMX path, its Go twin where
	// the CPU has no AMX).
	amxFor func(n int) bool
}

// DefaultBatch is the default prefill chunk: large enough that each weight matrix is streamed
// once for many tokens, small enough that the activations stay in the caches.
const DefaultBatch = 128

// Backend runs any supported architecture on the CPU: the runtime's one forward pass over this
// package's Projections. It implements runtime.Backend.
type Backend struct {
	*runtime.Decoder
	pool *kernels.Pool
}

// New prepares the CPU backend for m: it resolves the weights to views of the mapping (nothing
// is copied) and starts Threads-1 worker goroutines.
func New(m *runtime.Model, opts Options) (*Backend, error) {
	if opts.Threads < 0 {
		return nil, fmt.Errorf("threads is %d; expected 0 (all cores) or a positive number", opts.Threads)
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("batch is %d; expected 0 (default) or a positive number", opts.Batch)
	}
	batch := opts.Batch
	if batch == 0 {
		batch = DefaultBatch
	}
	pool := kernels.NewPool(opts.Threads)
	p, err := NewProjections(m, pool)
	if err == nil {
		switch {
		case opts.NoAMX:
			p.amxFor = nil
		case opts.amxFor != nil:
			p.amxFor = opts.amxFor
		}
		var d *runtime.Decoder
		if d, err = runtime.NewDecoder(m, p, runtime.DecoderOptions{Name: "cpu", Pool: pool, Batch: batch}); err == nil {
			return &Backend{Decoder: d, pool: pool}, nil
		}
	}
	pool.Close()
	return nil, err
}

// Threads returns the number of cores the backend uses.
func (b *Backend) Threads() int { return b.pool.Threads() }

// Close stops the worker goroutines.
func (b *Backend) Close() error {
	b.pool.Close()
	return nil
}
