package runtime

import (
	"fmt"
	"sort"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/sysmem"
)

// A state's KV cache is allocated whole, for every position of its context (the operating
// system provides the pages as they are first written). A bundle's shapes choose its size: a
// 204 MB bundle of four heads of head_dim 65536 in 16 layers needs 128 GiB at the default
// context. An allocation the system refuses is not an error in Go but a fatal "runtime: out of
// memory", so NewState and NewBatch size what they allocate against the memory the process can
// still take (package sysmem) first, and refuse with the figures and what to lower.

// stateBytes estimates what NewState(maxTokens) allocates: the KV cache, and the rest (the RoPE
// tables, attention's scratch, the recurrent state with its snapshots, the activations of one
// batch and a projector's scratch).
func (d *Decoder) stateBytes(maxTokens int) (cache, other int64) {
	c := d.cfg
	batch := min(d.batch, maxTokens)
	var positions int64 // cached positions summed over the layers
	for _, L := range d.layers {
		switch {
		case L.linear != nil:
		case L.sliding:
			positions += int64(min(maxTokens, d.window+2*batch))
		default:
			positions += int64(maxTokens)
		}
	}
	cache = 2 * int64(c.KVDim()) * positions * d.cache.ValueBytes()
	floats := d.workspaceFloats(batch)
	if d.gQKV >= 0 {
		groups := int64(c.NumAttentionHeads / max(c.NumKeyValueHeads, 1))
		floats += int64(d.pool.Threads()) * (groups*int64(maxTokens) + 64*int64(c.HeadDim))
	}
	if d.rotary {
		tables := int64(1)
		if d.local != nil {
			tables = 2
		}
		floats += tables * 2 * int64(maxTokens) * int64(2*len(d.invFreq))
	}
	other = 4*floats + int64(d.RecurrentStateBytes())*(1+maxSnapshots)
	return cache, other
}

// workspaceFloats estimates the float32 values of a workspace of rows tokens (newWorkspace) and
// of a projector's scratch for them (the widest, an MLP's intermediate activations).
func (d *Decoder) workspaceFloats(rows int) int64 {
	c := d.cfg
	per := 3*int64(c.HiddenSize) + int64(c.IntermediateSize)
	if d.gQKV >= 0 {
		per += int64(d.qkvOut) + 2*int64(c.QDim())
	}
	if d.gLinIn >= 0 {
		per += int64(d.linInOut) + int64(c.LinearValueDim()) + 2*int64(c.LinearConvDim())
	}
	if d.gExperts >= 0 {
		// The router's logits and routes; the experts' gathered rows and outputs, and their
		// intermediate activations where wider than the dense MLP's.
		per += int64(c.NumExperts) + 3*int64(c.NumExpertsPerTok) + 2*int64(c.HiddenSize) + int64(max(0, c.MoEIntermediateSize-c.IntermediateSize))
	}
	return int64(rows) * per
}

// checkStateMemory refuses a state of maxTokens positions that the process has no memory for,
// naming the sizes, the bound and the context that would fit.
func (d *Decoder) checkStateMemory(maxTokens int) error {
	avail, ok := sysmem.Available()
	if !ok {
		return nil
	}
	cache, other := d.stateBytes(maxTokens)
	if cache+other <= avail.Bytes {
		return nil
	}
	c := d.cfg
	attn := 0
	for _, L := range d.layers {
		if L.linear == nil {
			attn++
		}
	}
	msg := fmt.Sprintf("a context of %d tokens needs %s for its KV cache (%d attention layers of %d KV heads × head_dim %d, keys and values in %s) and %s for its other buffers: more than the %s the process can still take",
		maxTokens, bytesize.Format(cache), attn, c.NumKeyValueHeads, c.HeadDim, d.cache, bytesize.Format(other), avail)
	// The sizes grow with the context: find the largest that fits.
	fit := sort.Search(maxTokens, func(n int) bool {
		cache, other := d.stateBytes(n + 1)
		return cache+other > avail.Bytes
	})
	advice := ""
	if d.cache == CacheF32 {
		advice = ", or halve the cache with --cache-type f16"
	}
	if fit == 0 {
		return fmt.Errorf("%s; not even one token fits, whatever --ctx", msg)
	}
	return fmt.Errorf("%s; lower --ctx to %d tokens or fewer%s", msg, fit, advice)
}

// checkBatchMemory refuses a batch of rows tokens for seqs sequences that the process has no
// memory for.
func (d *Decoder) checkBatchMemory(rows, seqs int) error {
	avail, ok := sysmem.Available()
	if !ok {
		return nil
	}
	need := 4 * (d.workspaceFloats(rows) + int64(seqs)*int64(d.cfg.VocabSize))
	if need <= avail.Bytes {
		return nil
	}
	return fmt.Errorf("a batch of %d tokens for %d sequences needs %s of activations: more than the %s the process can still take; run fewer sequences at once",
		rows, seqs, bytesize.Format(need), avail)
}
