package kernels

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs data-parallel work on a fixed set of goroutines. A call splits a
// range [0, n) into chunks that the calling goroutine and whichever workers
// are awake claim one at a time (one atomic word), so a core slowed down by
// other load simply takes fewer chunks. The call returns once every chunk is
// done; it never waits for a worker that has not started (one still waking
// up joins whatever call is running when it does). Nothing is allocated per
// call: the job lives in the Pool, and the typed methods (MatVecF16, ...)
// need no closure.
//
// Between calls a worker spins (spinDuration) watching for the next job
// before it parks on its channel. Decode issues ~100 pooled calls per token
// with only microseconds between them, and waking a parked goroutine costs
// tens of microseconds on a VM, milliseconds when the host has descheduled
// the idle vCPU. Every poll runs the CPU's spin hint (spinPause), which
// spares the cache line being watched from 15 cores polling flat out, and
// every spinYield polls a spinning worker lets other goroutines of the
// process run (runtime.Gosched), so a long spin does not starve them. No
// spinning is done when the pool has more threads than GOMAXPROCS.
//
// A Pool runs one call at a time; concurrent calls are serialized. Close
// stops the workers. The zero Pool is not usable: use NewPool.
type Pool struct {
	threads int
	spin    time.Duration // how long to spin before parking: spinDuration, or 0 when oversubscribed
	workers []*poolWorker
	mu      sync.Mutex // one call at a time
	closing atomic.Bool

	// claim publishes the job and hands out its chunks: the job's sequence
	// number (claimSeqBits, wrapping), its chunk count and the next chunk
	// to claim, packed so one compare-and-swap claims a chunk of a known
	// job. The caller writes the job fields below before it stores a new
	// sequence number, and rewrites them only after every chunk is done, so
	// whoever claimed a chunk may read them.
	claim    atomic.Uint64
	finished atomic.Int64 // chunks of the current job done
	// panicked is the first panic of a chunk of the current job, raised again by the caller.
	panicked atomic.Pointer[workerPanic]

	kind   jobKind
	fn     func(lo, hi int)
	slotFn func(slot, lo, hi int)
	n      int
	grain  int
	head   int // chunks of grain items; those after them are tail items long
	tail   int
	y, x   []float32
	w16    []uint16
	w32    []float32
	tokens int
	rows   int
	cols   int
}

// The fields of Pool.claim: sequence number, chunk count, next chunk.
const (
	claimIdxBits   = 20
	claimCountBits = 20
	claimSeqBits   = 64 - claimIdxBits - claimCountBits
	maxChunks      = 1<<claimIdxBits - 1
	claimIdxMask   = 1<<claimIdxBits - 1
	claimCountMask = 1<<claimCountBits - 1
)

func claimSeq(c uint64) uint64 { return c >> (claimIdxBits + claimCountBits) }
func claimCount(c uint64) int  { return int(c >> claimIdxBits & claimCountMask) }
func claimIdx(c uint64) int    { return int(c & claimIdxMask) }

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

// spinDuration is how long a worker polls for the next job before it parks.
// Measured on 16 Sapphire Rapids vCPUs (a VM), 16-thread decode of the
// full-size Qwen2.5-0.5B (`anerun bench -p 16 -n 128`, four alternating
// rounds, parks per run in brackets): spinning 0.1 ms gave 47.6-95.0 tok/s
// (2,732-19,649), 2 ms 87.0-94.3 (28-236), 10 ms 86.1-98.6 (0-15) and 40 ms
// 85.2-95.3 (0). Before a call stopped waiting for every woken worker, short
// spins let decode collapse to 12-44 tok/s: one slow wake-up delayed the
// call, so more workers parked before the next one.
const spinDuration = 40 * time.Millisecond

// spinCheck is how many polls pass between two looks at the clock (reading
// it costs ~20 ns, a poll with its spin hint 10-40 ns); spinYield how many
// between two runtime.Gosched calls of a spinning worker.
const (
	spinCheck = 256
	spinYield = 4096
)

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
// threads-1 workers are started. threads <= 0 means runtime.GOMAXPROCS(0): one per
// CPU the Go runtime runs on, which follows taskset, a container's CPU limit and anerun --cpus
// (runtime.NumCPU counts the CPUs of the process's start).
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, workers: make([]*poolWorker, threads-1)}
	// Spinning only pays when every pool goroutine has a P of its own; with
	// more threads than GOMAXPROCS a spinning goroutine just delays the one
	// it waits for.
	if threads <= runtime.GOMAXPROCS(0) {
		p.spin = spinDuration
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

// worker takes part in every job it sees until the pool closes.
func (p *Pool) worker(id int, w *poolWorker) {
	seen := claimSeq(p.claim.Load()) // the last job taken part in
	for {
		c, ok := p.awaitJob(seen)
		for !ok {
			// Park. Announce it first, then look once more so a job
			// published in between is not missed: either we take the
			// state back (no wake-up is coming) or the caller already
			// took it and its send is on the way.
			w.state.Store(workerParked)
			if claimSeq(p.claim.Load()) == seen {
				if _, open := <-w.wake; !open {
					return
				}
			} else if !w.state.CompareAndSwap(workerParked, workerSpinning) {
				if _, open := <-w.wake; !open {
					return
				}
			}
			w.state.Store(workerSpinning)
			if p.closing.Load() {
				return
			}
			c, ok = p.awaitJob(seen)
		}
		seen = claimSeq(c)
		p.work(seen, id+1)
	}
}

// awaitJob polls for a job other than seen for up to p.spin and returns the
// claim word and true, or false when the spin ran out or the pool is closing.
func (p *Pool) awaitJob(seen uint64) (c uint64, ok bool) {
	var start time.Time
	for i := 1; ; i++ {
		if c = p.claim.Load(); claimSeq(c) != seen {
			return c, true
		}
		if p.spin == 0 {
			return c, false
		}
		if i%spinCheck == 0 {
			if p.closing.Load() {
				return c, false
			}
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) >= p.spin {
				return c, false
			}
			if i%spinYield == 0 {
				runtime.Gosched()
			}
		}
		spinPause()
	}
}

// work claims chunks of job seq until none is left (or that job is over) and
// runs them in slot (the caller's is 0, worker i's i+1).
func (p *Pool) work(seq uint64, slot int) {
	for {
		c := p.claim.Load()
		i := claimIdx(c)
		if claimSeq(c) != seq || i >= claimCount(c) {
			return
		}
		if !p.claim.CompareAndSwap(c, c+1) {
			continue
		}
		lo, hi := p.chunk(i)
		p.doChunk(slot, lo, hi)
	}
}

// doChunk runs one chunk and counts it done, even when it panics: the panic is kept for the
// caller (runTail raises it again on its own goroutine, once every chunk is done), since on a
// worker's goroutine nothing could recover it and the whole process would die.
func (p *Pool) doChunk(slot, lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked.CompareAndSwap(nil, &workerPanic{value: r, stack: debug.Stack()})
		}
		p.finished.Add(1)
	}()
	p.do(slot, lo, hi)
}

// workerPanic is a panic of one chunk of a call: its value and the stack it was raised on.
type workerPanic struct {
	value any
	stack []byte
}

// PanicError is what a pooled call panics with on the caller's goroutine when one of its chunks
// panicked: the chunk's panic value and stack, whichever goroutine ran it. A caller that
// recovers panics (a server answering one request with an error) gets the original stack with it.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("%v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
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

// chunk returns the items of chunk i: the first p.head chunks are p.grain items long, the
// rest p.tail, the last cut at p.n.
func (p *Pool) chunk(i int) (lo, hi int) {
	if i < p.head {
		lo = i * p.grain
		return lo, min(p.n, lo+p.grain)
	}
	lo = p.head*p.grain + (i-p.head)*p.tail
	return lo, min(p.n, lo+p.tail)
}

// run executes the job set up in p over [0, n) in chunks of grain items.
// The caller holds p.mu.
func (p *Pool) run(n, grain int) { p.runTail(n, grain, grain) }

// runTail is run with the last round cut finer: chunks of grain items while more than a
// chunk per goroutine is left, then chunks of tail items (tail <= grain).
func (p *Pool) runTail(n, grain, tail int) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1, (n+maxChunks-1)/maxChunks)
	tail = min(max(tail, 1), grain)
	head := max(0, (n-p.threads*grain)/grain)
	chunks := head + (n-head*grain+tail-1)/tail
	if tail == grain || chunks > maxChunks {
		head, tail = (n+grain-1)/grain, grain
		chunks = head
	}
	p.n, p.grain, p.head, p.tail = n, grain, head, tail
	p.finished.Store(0)
	seq := (claimSeq(p.claim.Load()) + 1) & (1<<claimSeqBits - 1)
	p.claim.Store(seq<<(claimIdxBits+claimCountBits) | uint64(chunks)<<claimIdxBits)
	if !p.closing.Load() {
		// Wake parked workers, as many as there are chunks for besides ours.
		woken := 0
		for _, w := range p.workers {
			if woken >= chunks-1 {
				break
			}
			if w.state.Load() == workerParked && w.state.CompareAndSwap(workerParked, workerSpinning) {
				w.wake <- struct{}{}
				woken++
			}
		}
	}
	p.work(seq, 0)
	// Every chunk is claimed; wait for the ones other goroutines still run.
	for i := 1; p.finished.Load() != int64(chunks); i++ {
		if i%spinCheck == 0 {
			runtime.Gosched() // a claimant without a P of its own needs ours
		}
		spinPause()
	}
	// Drop references so the pool does not keep buffers alive.
	p.fn, p.slotFn, p.y, p.x, p.w16, p.w32 = nil, nil, nil, nil, nil, nil
	if wp := p.panicked.Swap(nil); wp != nil {
		panic(&PanicError{Value: wp.value, Stack: wp.stack})
	}
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
// every work item on the channel's lock: decode of Qwen2.5-0.5B on 16 threads sent ~3300 per
// token through it.)
func (p *Pool) ParallelSlots(n, grain int, fn func(slot, lo, hi int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.slotFn = jobSlotFunc, fn
	p.run(n, grain)
}

// ParallelSlotsTail is ParallelSlots with the call's last round cut finer: ranges of grain
// while more than one per goroutine is left, then of tail (both multiples of whatever unit fn
// needs). A goroutine that falls behind, on a core the host has slowed, then holds the call for
// one short range, not one of grain. 16-thread prefill on a 16-core Xeon with AMX waited for its
// slowest goroutine a fifth of its time with equal ranges (commit 8713e6f).
func (p *Pool) ParallelSlotsTail(n, grain, tail int, fn func(slot, lo, hi int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.slotFn = jobSlotFunc, fn
	p.runTail(n, grain, tail)
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
