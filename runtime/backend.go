package runtime

// Backend computes a model's forward pass. It is deliberately small: one call runs a batch of
// tokens and returns logits, so a backend is free to fuse, tile and schedule its work however it
// likes (the CPU runs GEMMs over the whole batch; the ANE runs fused programs in sequence-length
// buckets), and the session, sampling and generation code above it is shared by all of them.
// Package runtime/backend chooses one (its Open, with "auto"); nothing in this package does.
type Backend interface {
	// Name is the backend's name as users select it: "cpu", "ane", "sim".
	Name() string
	// NewState allocates the state of one sequence — its KV cache, and the recurrent state of
	// Gated DeltaNet layers — for positions [0, maxTokens). maxTokens is at most the model's
	// max_position_embeddings.
	NewState(maxTokens int) (State, error)
	// Close releases the backend's resources (worker threads, compiled programs). States must
	// be closed first.
	Close() error
}

// State is one sequence's cache of keys and values (and recurrent state) inside a backend.
type State interface {
	// Forward runs tokens at positions pos, pos+1, ... pos+len(tokens)-1. Attention sees the
	// cached positions below pos and, causally, the new tokens; the new tokens' keys and values
	// replace whatever the cache held at their positions, so moving back (a smaller pos than
	// last time) discards the cached tail. A state that implements Resumer moves back only to
	// the positions ResumeAt allows, and refuses others. It writes the logits of the last len(logits)/vocab
	// tokens, row after row, into logits; len(logits) must be a multiple of the vocabulary size
	// and at most len(tokens) rows. pos+len(tokens) must not exceed the state's maxTokens.
	// Forward must not allocate per call once warmed up, so that decoding is allocation-free.
	Forward(tokens []int, pos int, logits []float32) error
	// Close releases the cache.
	Close() error
}

// Resumer is implemented by states that cannot continue from every earlier position: a
// sliding-window ring keeps only the last positions, a recurrent state only the current one and
// its snapshots. Session asks before reusing a cached prefix.
type Resumer interface {
	// ResumeAt returns the largest position p <= pos at which Forward may continue the cached
	// sequence (0 means: run it again from the start).
	ResumeAt(pos int) int
}

// Sizer is implemented by states that report the memory they hold for their sequence.
type Sizer interface {
	// Bytes returns the bytes allocated for the state: its KV cache (whose pages the operating
	// system provides as positions are first written) and any recurrent state.
	Bytes() int64
}
