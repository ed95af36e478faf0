package grammar

import (
	"container/list"
	"sync"
)

// Cache keeps compiled grammars by key (a canonical form of what they were compiled from), the
// most recently used ones, at most a fixed number: compiling is cheap next to a generation, but
// a client that sends the same schema with every request should not pay for it each time, and a
// client that sends a new one each time should not fill memory. Safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	max    int
	order  *list.List // of *cacheEntry, most recent first
	byKey  map[string]*list.Element
	hits   uint64
	misses uint64
}

type cacheEntry struct {
	key string
	g   *Grammar
}

// NewCache returns a cache of at most size grammars (at least 1).
func NewCache(size int) *Cache {
	return &Cache{max: max(size, 1), order: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the grammar cached under key, or builds, caches and returns it. Errors are not
// cached. Two requests that miss the same key at once may both build it; the grammars are
// equal, and the later one is kept.
func (c *Cache) Get(key string, build func() (*Grammar, error)) (*Grammar, error) {
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		c.hits++
		g := e.Value.(*cacheEntry).g
		c.mu.Unlock()
		return g, nil
	}
	c.misses++
	c.mu.Unlock()

	g, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		e.Value.(*cacheEntry).g = g
		c.order.MoveToFront(e)
		return g, nil
	}
	c.byKey[key] = c.order.PushFront(&cacheEntry{key: key, g: g})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
	return g, nil
}

// Stats returns the grammars cached and the lookups that found one and that did not.
func (c *Cache) Stats() (size int, hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.hits, c.misses
}
