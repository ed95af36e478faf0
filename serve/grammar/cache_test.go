package grammar

import (
	"errors"
	"fmt"
	"testing"
)

func TestCache(t *testing.T) {
	c := NewCache(2)
	builds := 0
	get := func(key string) *Grammar {
		g, err := c.Get(key, func() (*Grammar, error) {
			builds++
			b := NewBuilder()
			r, err := b.Schema([]byte(`{"type":"string"}`))
			if err != nil {
				return nil, err
			}
			return b.Build(r)
		})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a := get("a")
	if get("a") != a || builds != 1 {
		t.Fatalf("a second lookup of a built again (%d builds)", builds)
	}
	get("b")
	get("a") // a is now the most recent: c evicts b
	get("c")
	if size, hits, misses := c.Stats(); size != 2 || hits != 2 || misses != 3 {
		t.Fatalf("stats %d %d %d; want 2 cached, 2 hits, 3 misses", size, hits, misses)
	}
	get("a")
	if builds != 3 {
		t.Fatalf("a was evicted (%d builds); want the least recently used (b) evicted", builds)
	}
	get("b")
	if builds != 4 {
		t.Fatalf("b was still cached (%d builds); the cache holds only 2", builds)
	}
	want := errors.New("bad schema")
	for i := range 3 {
		if _, err := c.Get(fmt.Sprint("bad", i%2), func() (*Grammar, error) { return nil, want }); err != want {
			t.Fatalf("error %v; want %v", err, want)
		}
	}
	if size, _, _ := c.Stats(); size != 2 {
		t.Fatalf("errors were cached: %d entries", size)
	}
}
