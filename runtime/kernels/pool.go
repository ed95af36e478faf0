package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs data-parallel work on a fixed set of goroutines. A call splits a
// range [0, n) into chunks that the workers and the calling goroutine claim
// one at a time (an atomic counter), so a core slowed down by other load
// simply takes fewer chunks. Nothing is allocated per call: the job lives in
// the Pool, and the typed methods (MatVecF16, ...) need no closure.
//
// Between calls a worker spins for a short while (spinDuration) watching for
// the next job before it parks on its channel. Decode issues ~100 pooled
// calls per token with only microseconds between them; waking a parked
// goroutine costs tens of microseconds on a VM (the host must reschedule an
// idle vCPU), which measured as ~20% of GEMV throughput on 4864x896
// matrices. Spinning keeps the workers hot for the whole token and costs
// nothing once a pause outlasts the spin. Every poll of a spin loop first
// runs the CPU's spin hint (spinPause): on 16 Sapphire Rapids cores, 15
// workers polling flat out slowed decode by a fifth, through the traffic
// on the cache lines they watch.
//
// A Pool runs one call at a time; concurrent calls are serialized. Close
// stops the workers. The zero Pool is not usable: use NewPool.
type Pool struct {
	threads int
	spin    int // polls before blocking: spinPolls(), or 0 when oversubscribed
	workers []*poolWorker
	mu      sync.Mutex // one call at a time
	closing atomic.Bool

	// job is the published job: its sequence number << 16 | the number of
	// workers that take part. Workers watch it; the caller bumps it after
	// writing the fields below, which the taking-part workers then read.
	job     atomic.Uint64
	pending atomic.Int32   // taking-part workers not finished yet
	done    sync.WaitGroup // the same count, for a caller that stops spinning

	kind   jobKind
	fn     func(lo, hi int)
	slotFn func(slot, lo, hi int)
	n      int
	grain  int
	chunks int64
	next   atomic.Int64
	y, x   []float32
	w16    []uint16
	w32    []float32
	tokens int
	rows   int
	cols   int
}

// poolWorker is one worker's wake-up channel and parking state, padded so
// two workers' states never share a cache line.
type poolWorker struct {
	wake  chan struct{}
	state atomic.Int32 // workerSpinning or workerParked
	_     [56]byte
}

const (
	workerSpinning = iota
	workerParked
)

// spinDuration is about how long a worker (or the waiting caller) polls
// before blocking.
const spinDuration = 100 * time.Microsecond

// spinPolls returns how many polls last spinDuration, measured once per
// process: a spin hint takes from a few cycles to ~140 (Skylake and later
// Intel cores), so a fixed count would spin for anything from 10 µs to 3 ms.
var spinPolls = sync.OnceValue(func() int {
	const probe = 2000
	start := time.Now()
	for range probe {
		spinPause()
	}
	per := max(time.Since(start)/probe, 1)
	return min(max(int(spinDuration/per), 1<<8), 1<<16)
})

type jobKind int

const (
	jobFunc jobKind = iota
	jobSlotFunc
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
	p := &Pool{threads: threads, workers: make([]*poolWorker, threads-1)}
	// Spinning only pays when every pool goroutine has a P of its own; with
	// more threads than GOMAXPROCS a spinning goroutine just delays the one
	// it waits for.
	if threads <= runtime.GOMAXPROCS(0) {
		p.spin = spinPolls()
	}
	for i := range p.workers {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		p.workers[i] = w
		go p.worker(i, w)
	}
	return p
}

// Threads returns the number of goroutines a call uses, the caller included.
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers. The pool must not be used afterwards, except that
// a call on a closed pool still completes, on the calling goroutine alone.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing.Swap(true) {
		return
	}
	for _, w := range p.workers {
		close(w.wake)
	}
}

// worker runs the jobs in which it takes part until the pool closes.
func (p *Pool) worker(id int, w *poolWorker) {
	var seen uint64 // last job sequence number handled
	for {
		job := p.job.Load()
		for spin := 0; job>>16 == seen; spin++ {
			if spin >= p.spin {
				// Park. Announce it first, then look once more so a job
				// published in between is not missed: either we take the
				// state back (no wake-up is coming) or the caller already
				// took it and its send is on the way.
				w.state.Store(workerParked)
				if p.job.Load()>>16 == seen {
					if _, ok := <-w.wake; !ok {
						return
					}
				} else if !w.state.CompareAndSwap(workerParked, workerSpinning) {
					if _, ok := <-w.wake; !ok {
						return
					}
				}
				w.state.Store(workerSpinning)
				spin = 0
			}
			if p.closing.Load() {
				return
			}
			spinPause()
			job = p.job.Load()
		}
		seen = job >> 16
		if id < int(job&0xFFFF) {
			p.work(id + 1)
			p.pending.Add(-1)
			p.done.Done()
		}
	}
}

// work claims chunks until none is left; slot is the goroutine's slot (the caller 0, worker
// i i+1).
func (p *Pool) work(slot int) {
	for {
		c := p.next.Add(1) - 1
		if c >= p.chunks {
			return
		}
		lo := int(c) * p.grain
		p.do(slot, lo, min(p.n, lo+p.grain))
	}
}

// do runs the current job on items [lo, hi) in slot.
func (p *Pool) do(slot, lo, hi int) {
	switch p.kind {
	case jobFunc:
		p.fn(lo, hi)
	case jobSlotFunc:
		p.slotFn(slot, lo, hi)
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
	helpers := min(len(p.workers), int(p.chunks)-1)
	if p.closing.Load() {
		helpers = 0 // a closed pool still works, on the caller alone
	}
	if helpers > 0 {
		p.pending.Store(int32(helpers))
		p.done.Add(helpers)
		seq := p.job.Load()>>16 + 1
		p.job.Store(seq<<16 | uint64(helpers))
		for _, w := range p.workers[:helpers] {
			if w.state.CompareAndSwap(workerParked, workerSpinning) {
				w.wake <- struct{}{}
			}
		}
	}
	p.work(0)
	if helpers > 0 {
		for spin := 0; p.pending.Load() != 0 && spin < p.spin; spin++ {
			spinPause()
		}
		p.done.Wait()
	}
	// Drop references so the pool does not keep buffers alive.
	p.fn, p.slotFn, p.y, p.x, p.w16, p.w32 = nil, nil, nil, nil, nil, nil
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

// ParallelSlots is Parallel for work that needs scratch memory: fn(slot, lo, hi) also gets the
// slot of the goroutine running it, in [0, Threads()), which no other goroutine of the call
// uses at the same time, so per-slot buffers need no locking. (A channel of buffers serializes
// every work item on the channel's lock: with 16 threads, decode's ~5000 items per token
// contended for it.)
func (p *Pool) ParallelSlots(n, grain int, fn func(slot, lo, hi int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.slotFn = jobSlotFunc, fn
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
	p.run(rows, p.rowGrain(rows, gemmRowMultiple(), 12))
}

// MatMulF32 is MatMulF32 with the weight rows split over the pool.
func (p *Pool) MatMulF32(y, x, w []float32, n, rows, cols int) {
	checkMat("Pool.MatMulF32", len(y), len(w), len(x), n, rows, cols)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.y, p.x, p.w32, p.tokens, p.rows, p.cols = jobMatMulF32, y, x, w, n, rows, cols
	p.run(rows, p.rowGrain(rows, gemmRowMultiple(), 12))
}
