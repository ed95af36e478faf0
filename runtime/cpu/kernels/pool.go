package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs data-parallel work on a fixed set of goroutines. A call splits a
// range [0, n) into chunks that the workers and the calling goroutine claim
// one at a time (an atomic counter), so a core slowed down by other load
// simply takes fewer chunks. Nothing is allocated per call: the job lives in
// the Pool, and the typed methods (MatVecF16, ...) need no closure.
//
// A Pool runs one call at a time; concurrent calls are serialized. Close
// stops the workers. The zero Pool is not usable: use NewPool.
type Pool struct {
	threads int
	wake    []chan struct{} // one per worker; a send starts it on the job
	done    sync.WaitGroup
	mu      sync.Mutex // one call at a time

	// The current job, written by the caller before waking the workers.
	kind    jobKind
	fn      func(lo, hi int)
	n       int
	grain   int
	chunks  int64
	next    atomic.Int64
	y, x    []float32
	w16     []uint16
	w32     []float32
	tokens  int
	rows    int
	cols    int
	closing bool
}

type jobKind int

const (
	jobFunc jobKind = iota
	jobMatVecF16
	jobMatVecF32
	jobMatMulF16
	jobMatMulF32
)

// NewPool starts a pool of threads goroutines in all, counting the caller:
// threads-1 workers are started. threads <= 0 means runtime.NumCPU().
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := &Pool{threads: threads, wake: make([]chan struct{}, threads-1)}
	for i := range p.wake {
		ch := make(chan struct{}, 1)
		p.wake[i] = ch
		go p.worker(ch)
	}
	return p
}

// Threads returns the number of goroutines a call uses, the caller included.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return
	}
	p.closing = true
	for _, ch := range p.wake {
		close(ch)
	}
}

func (p *Pool) worker(wake chan struct{}) {
	for range wake {
		p.work()
		p.done.Done()
	}
}

// work claims chunks until none is left.
func (p *Pool) work() {
	for {
		c := p.next.Add(1) - 1
		if c >= p.chunks {
			return
		}
		lo := int(c) * p.grain
		p.do(lo, min(p.n, lo+p.grain))
	}
}

// do runs the current job on items [lo, hi).
func (p *Pool) do(lo, hi int) {
	switch p.kind {
	case jobFunc:
		p.fn(lo, hi)
	case jobMatVecF16:
		c := p.cols
		MatVecF16(p.y[lo:hi], p.w16[lo*c:hi*c], p.x, hi-lo, c)
	case jobMatVecF32:
		c := p.cols
		MatVecF32(p.y[lo:hi], p.w32[lo*c:hi*c], p.x, hi-lo, c)
	case jobMatMulF16:
		matMulF16Rows(p.y, p.x, p.w16, p.tokens, p.rows, p.cols, lo, hi)
	case jobMatMulF32:
		matMulF32Rows(p.y, p.x, p.w32, p.tokens, p.rows, p.cols, lo, hi)
	}
}

// run executes the job set up in p over [0, n) in chunks of grain items.
// The caller holds p.mu.
func (p *Pool) run(n, grain int) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	p.n, p.grain = n, grain
	p.chunks = int64((n + grain - 1) / grain)
	p.next.Store(0)
	helpers := min(len(p.wake), int(p.chunks)-1)
	if p.closing {
		helpers = 0 // a closed pool still works, on the caller alone
	}
	p.done.Add(helpers)
	for _, ch := range p.wake[:helpers] {
		ch <- struct{}{}
	}
	p.work()
	p.done.Wait()
	// Drop references so the pool does not keep buffers alive.
	p.fn, p.y, p.x, p.w16, p.w32 = nil, nil, nil, nil, nil
}

// Parallel calls fn(lo, hi) on disjoint ranges covering [0, n), each at most
// grain long, from up to Threads() goroutines at once, and returns when all
// are done. fn must be safe to call concurrently on disjoint ranges. To stay
// allocation-free, pass a func value created once, not a fresh closure.
func (p *Pool) Parallel(n, grain int, fn func(lo, hi int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.fn = jobFunc, fn
	p.run(n, grain)
}

// rowGrain picks the rows per chunk: about 4 chunks per thread (balance if
// one core is busy with something else) of a multiple of `multiple` rows,
// but at least minRows so each chunk amortizes its start.
func (p *Pool) rowGrain(rows, multiple, minRows int) int {
	g := rows / (4 * p.threads)
	g = max(g, minRows)
	return (g + multiple - 1) / multiple * multiple
}

// MatVecF16 is MatVecF16 with the rows split over the pool.
func (p *Pool) MatVecF16(y []float32, w []uint16, x []float32, rows, cols int) {
	checkMat("Pool.MatVecF16", len(y), len(w), len(x), 1, rows, cols)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.y, p.w16, p.x, p.cols = jobMatVecF16, y, w, x, cols
	p.run(rows, p.rowGrain(rows, 4, 64))
}

// MatVecF32 is MatVecF32 with the rows split over the pool.
func (p *Pool) MatVecF32(y []float32, w []float32, x []float32, rows, cols int) {
	checkMat("Pool.MatVecF32", len(y), len(w), len(x), 1, rows, cols)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.y, p.w32, p.x, p.cols = jobMatVecF32, y, w, x, cols
	p.run(rows, p.rowGrain(rows, 4, 32))
}

// MatMulF16 is MatMulF16 with the weight rows split over the pool.
func (p *Pool) MatMulF16(y, x []float32, w []uint16, n, rows, cols int) {
	checkMat("Pool.MatMulF16", len(y), len(w), len(x), n, rows, cols)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.y, p.x, p.w16, p.tokens, p.rows, p.cols = jobMatMulF16, y, x, w, n, rows, cols
	p.run(rows, p.rowGrain(rows, tileRows, 12))
}

// MatMulF32 is MatMulF32 with the weight rows split over the pool.
func (p *Pool) MatMulF32(y, x, w []float32, n, rows, cols int) {
	checkMat("Pool.MatMulF32", len(y), len(w), len(x), n, rows, cols)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.y, p.x, p.w32, p.tokens, p.rows, p.cols = jobMatMulF32, y, x, w, n, rows, cols
	p.run(rows, p.rowGrain(rows, tileRows, 12))
}
