package runtime

import "fmt"

// CacheType is the element type of a state's KV cache (DecoderOptions.Cache).
type CacheType int

// The values of CacheType.
const (
	// CacheF32 keeps keys and values as computed, in float32: the output Hugging Face
	// transformers computes in float32. The default.
	CacheF32 CacheType = iota
	// CacheF16 rounds them to fp16, as llama.cpp's default cache does: half the memory, and
	// half the bytes a decode step reads from the cache, a large share of all it reads at
	// long contexts. Values beyond fp16's range (±65504) become infinite.
	CacheF16
)

// cacheTypeNames are the names ParseCacheType accepts, in CacheType order.
var cacheTypeNames = []string{"f32", "f16"}

// valid reports whether c is one of the types above.
func (c CacheType) valid() bool { return c >= 0 && int(c) < len(cacheTypeNames) }

// String returns the type's name: f32 or f16.
func (c CacheType) String() string {
	if !c.valid() {
		return fmt.Sprintf("CacheType(%d)", int(c))
	}
	return cacheTypeNames[c]
}

// ParseCacheType returns the CacheType named s (f32 or f16).
func ParseCacheType(s string) (CacheType, error) {
	for i, name := range cacheTypeNames {
		if s == name {
			return CacheType(i), nil
		}
	}
	return 0, fmt.Errorf("KV cache type %q: expected f32 or f16", s)
}

// ValueBytes returns the size of one cached value: 4 or 2.
func (c CacheType) ValueBytes() int64 {
	if c == CacheF16 {
		return 2
	}
	return 4
}
