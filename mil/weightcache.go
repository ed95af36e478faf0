package mil

import (
	"encoding/binary"
	"math"
	"sync"
)

// WeightCache shares the float32 copies of BLOBFILE constants between executables. Every
// prefill bucket of a layer reads the same blob bytes, so without sharing a model compiled for
// five buckets would hold five float32 copies of its weights. The key is the payload's
// address, so the cache is only correct while the blob bytes it saw are not modified, which
// holds for a memory-mapped bundle. It is safe for concurrent use. A nil *WeightCache decodes
// without sharing.
type WeightCache struct {
	mu sync.Mutex
	m  map[cacheKey][]float32
}

type cacheKey struct {
	p  *byte
	n  int
	dt DType
}

// NewWeightCache returns an empty cache.
func NewWeightCache() *WeightCache { return &WeightCache{m: map[cacheKey][]float32{}} }

// Len returns the number of cached tensors.
func (wc *WeightCache) Len() int {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return len(wc.m)
}

// decode returns n float32 values decoded from fp16 or fp32 bytes; the result is shared and
// must not be modified.
func (wc *WeightCache) decode(raw []byte, dt DType, n int) []float32 {
	if wc == nil || len(raw) == 0 {
		return decodeFloats(raw, dt, n)
	}
	k := cacheKey{&raw[0], n, dt}
	wc.mu.Lock()
	f, ok := wc.m[k]
	wc.mu.Unlock()
	if ok {
		return f
	}
	f = decodeFloats(raw, dt, n)
	wc.mu.Lock()
	if prev, ok := wc.m[k]; ok {
		f = prev
	} else {
		wc.m[k] = f
	}
	wc.mu.Unlock()
	return f
}

func decodeFloats(raw []byte, dt DType, n int) []float32 {
	f := make([]float32, n)
	switch dt {
	case FP16:
		decodeF16(f, raw)
	case FP32:
		for i := range f {
			f[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return f
}
