package tokenizer

import (
	"slices"
	"sync"
	"testing"
)

// TestConcurrentUse runs Encode, Decode, streaming and chat rendering from many goroutines on
// one Tokenizer (run with -race to check the pool-based cache and the template cache).
func TestConcurrentUse(t *testing.T) {
	tk := qwen(t)
	recs := readJSONL[tokRecord](t, "tokenizer-public.jsonl")
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(recs); i += 8 {
				r := recs[i]
				if got := tk.Encode(r.Text); !slices.Equal(got, r.IDs) {
					errs <- r.Text
					return
				}
				if tk.Decode(r.IDs) != r.Decoded {
					errs <- r.Text
					return
				}
				if _, err := tk.ApplyChatTemplate([]Message{{Role: "user", Content: r.Text}}, ChatOptions{AddGenerationPrompt: true}); err != nil {
					errs <- err.Error()
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent use failed on %q", e)
	}
}
