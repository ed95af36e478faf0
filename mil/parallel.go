package mil

import (
	"runtime"
	"sync"
)

// A small pool of long-lived workers splits big kernels (conv, matmul) by output rows. Work is
// handed over as a struct by value, so a call allocates nothing.
type task struct {
	fn     func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

var pool struct {
	once    sync.Once
	ch      chan task
	workers int
}

func startPool() {
	pool.workers = runtime.GOMAXPROCS(0)
	pool.ch = make(chan task, 4*pool.workers)
	for i := 0; i < pool.workers; i++ {
		go func() {
			for t := range pool.ch {
				t.fn(t.lo, t.hi)
				t.wg.Done()
			}
		}()
	}
}

// parallelFor calls fn over [0, n) split into contiguous ranges, at most one per CPU and none
// shorter than grain, and returns when all are done. wg is the caller's, reused across calls.
func parallelFor(n, grain int, fn func(lo, hi int), wg *sync.WaitGroup) {
	pool.once.Do(startPool)
	parts := min(pool.workers, n/max(grain, 1))
	if parts <= 1 {
		fn(0, n)
		return
	}
	step := (n + parts - 1) / parts
	wg.Add(parts - 1)
	lo := 0
	for p := 0; p < parts-1; p++ {
		pool.ch <- task{fn, lo, lo + step, wg}
		lo += step
	}
	fn(lo, n)
	wg.Wait()
}
