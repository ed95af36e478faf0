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
	// AMX says where fp16 and q8 prefill products run on a CPU with AMX-BF16 (kernels.UseAMX):
	// AMXAuto (the zero value) on AMX when the backend has at most AMXAutoThreads threads,
	// AMXOn always, AMXOff never (the AVX-512 kernels).
	AMX AMXMode
	// Cache is the KV cache's element type (runtime.CacheF32, the zero value, or CacheF16).
	Cache runtime.CacheType

	// amxFor replaces kernels.UseAMX (tests: every prefill on the AMX path, its Go twin where
	// the CPU has no AMX).
	amxFor func(n int) bool
}

// AMXMode is Options.AMX.
type AMXMode int

// The values of AMXMode.
const (
	AMXAuto AMXMode = iota
	AMXOn
	AMXOff
)

// AMXAutoThreads is the most threads for which AMXAuto runs prefill on AMX. Measured on a
// 16-core Sapphire Rapids VM (docs/performance.md, "Decisions backed by measurement"), full-size
// Qwen2.5-0.5B prefill of 128 tokens against the AVX-512 kernels: 1.4-2x on 1 thread, 1.1-1.7x
// on 2, about even on 4 (the 4864-column down projection loses there), 0.9x on 8 and 16, where
// every core's tile unit slows down (the same tile kernel: 28 ns a tile product on one core, 38
// on eight at once, 62-74 on sixteen).
const AMXAutoThreads = 2

// DefaultBatch is the default prefill chunk: large enough that each weight matrix is streamed
// once for many tokens, small enough that the activations stay in the caches.
const DefaultBatch = 128

// Backend runs any supported architecture on the CPU: the runtime's one forward pass over this
// package's Projections. It implements runtime.Backend.
type Backend struct {
	*runtime.Decoder
	pool *kernels.Pool
	amx  bool
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
	if opts.AMX < AMXAuto || opts.AMX > AMXOff {
		return nil, fmt.Errorf("AMX mode is %d; expected AMXAuto, AMXOn or AMXOff", opts.AMX)
	}
	batch := opts.Batch
	if batch == 0 {
		batch = DefaultBatch
	}
	pool := kernels.NewPool(opts.Threads)
	p, err := NewProjections(m, pool)
	if err == nil {
		switch {
		case opts.amxFor != nil:
			p.amxFor = opts.amxFor
		case opts.AMX == AMXOff, opts.AMX == AMXAuto && pool.Threads() > AMXAutoThreads:
			p.amxFor = nil
		}
		var d *runtime.Decoder
		if d, err = runtime.NewDecoder(m, p, runtime.DecoderOptions{Name: "cpu", Pool: pool, Batch: batch, Cache: opts.Cache}); err == nil {
			return &Backend{Decoder: d, pool: pool, amx: p.amxFor != nil && p.amxFor(batch) && p.hasAMXWeights()}, nil
		}
	}
	pool.Close()
	return nil, err
}

// AMXPrefill reports whether prefill chunks of the default size run products on AMX tiles
// (Options.AMX, kernels.UseAMX): the model has fp16 or q8 projections (an int4 bundle's are
// all q4, which stay on the vector units).
func (b *Backend) AMXPrefill() bool { return b.amx }

// Threads returns the number of cores the backend uses.
func (b *Backend) Threads() int { return b.pool.Threads() }

// Close stops the worker goroutines.
func (b *Backend) Close() error {
	b.pool.Close()
	return nil
}
