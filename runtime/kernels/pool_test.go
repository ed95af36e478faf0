package kernels

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolMatchesSerial requires the pooled kernels to give exactly the
// serial results: every output is computed by the same code in the same
// order, only on another goroutine.
func TestPoolMatchesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, threads := range []int{1, 2, 3, 8} {
		p := NewPool(threads)
		for _, shape := range [][3]int{{1, 1, 1}, {1, 301, 67}, {5, 300, 64}, {9, 97, 33}, {2, 1000, 8}} {
			n, rows, cols := shape[0], shape[1], shape[2]
			m := newMats(r, n, rows, cols, false)
			want, got := make([]float32, n*rows), make([]float32, n*rows)

			MatMulF16(want, m.x, m.w16, n, rows, cols)
			p.MatMulF16(got, m.x, m.w16, n, rows, cols)
			if !slices.Equal(got, want) {
				t.Fatalf("threads %d shape %v: Pool.MatMulF16 differs from MatMulF16", threads, shape)
			}
			MatMulF32(want, m.x, m.w32, n, rows, cols)
			p.MatMulF32(got, m.x, m.w32, n, rows, cols)
			if !slices.Equal(got, want) {
				t.Fatalf("threads %d shape %v: Pool.MatMulF32 differs", threads, shape)
			}
			MatVecF16(want[:rows], m.w16, m.x, rows, cols)
			p.MatVecF16(got[:rows], m.w16, m.x, rows, cols)
			if !slices.Equal(got[:rows], want[:rows]) {
				t.Fatalf("threads %d shape %v: Pool.MatVecF16 differs", threads, shape)
			}
			MatVecF32(want[:rows], m.w32, m.x, rows, cols)
			p.MatVecF32(got[:rows], m.w32, m.x, rows, cols)
			if !slices.Equal(got[:rows], want[:rows]) {
				t.Fatalf("threads %d shape %v: Pool.MatVecF32 differs", threads, shape)
			}
		}
		p.Close()
	}
}

// TestPoolParallelCoversRange checks that Parallel hands out every index
// exactly once, in ranges no longer than the grain, and that a closed pool
// still completes work on the caller.
func TestPoolParallelCoversRange(t *testing.T) {
	p := NewPool(4)
	for _, n := range []int{0, 1, 7, 100, 1001} {
		for _, grain := range []int{0, 1, 3, 64, 5000} {
			hits := make([]atomic.Int32, n)
			p.Parallel(n, grain, func(lo, hi int) {
				if hi-lo > max(grain, 1) || lo >= hi {
					t.Errorf("n %d grain %d: range [%d, %d)", n, grain, lo, hi)
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if hits[i].Load() != 1 {
					t.Fatalf("n %d grain %d: index %d ran %d times", n, grain, i, hits[i].Load())
				}
			}
		}
	}
	p.Close()
	p.Close() // idempotent
	var sum atomic.Int64
	p.Parallel(10, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 10 {
		t.Fatalf("closed pool did %d of 10 items", sum.Load())
	}
}

// TestPoolParallelSlotsTail: the ranges cover [0, n) once; each starts at a multiple of tail
// (grain a multiple of tail, as callers pass them), is at most grain long, and once the ranges
// turn short (tail) they stay short; at most about one range of grain per goroutine is left
// when they turn, so a call with more than a round of work ends in a round of short ranges.
func TestPoolParallelSlotsTail(t *testing.T) {
	for _, threads := range []int{1, 2, 16} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 12, 100, 896, 4864} {
			for _, g := range [][2]int{{48, 12}, {12, 12}, {36, 12}, {5000, 100}} {
				grain, tail := g[0], g[1]
				var mu sync.Mutex
				var ranges [][2]int
				hits := make([]atomic.Int32, n)
				p.ParallelSlotsTail(n, grain, tail, func(slot, lo, hi int) {
					if slot < 0 || slot >= threads {
						t.Errorf("slot %d of %d threads", slot, threads)
					}
					mu.Lock()
					ranges = append(ranges, [2]int{lo, hi})
					mu.Unlock()
					for i := lo; i < hi; i++ {
						hits[i].Add(1)
					}
				})
				for i := range hits {
					if hits[i].Load() != 1 {
						t.Fatalf("threads %d n %d grain %d tail %d: index %d ran %d times", threads, n, grain, tail, i, hits[i].Load())
					}
				}
				slices.SortFunc(ranges, func(a, b [2]int) int { return a[0] - b[0] })
				short := -1 // where the short ranges begin
				for i, r := range ranges {
					size := r[1] - r[0]
					switch {
					case r[0]%tail != 0 || size > grain || size <= 0:
						t.Errorf("threads %d n %d grain %d tail %d: range %v", threads, n, grain, tail, r)
					case size < grain && short < 0:
						short = i
					case size == grain && short >= 0 && grain != tail && r[1] != n:
						t.Errorf("threads %d n %d grain %d tail %d: range %v of grain after short ones", threads, n, grain, tail, r)
					}
				}
				if short >= 0 && grain > tail && n > threads*grain && n-ranges[short][0] > (threads+1)*grain {
					t.Errorf("threads %d n %d grain %d tail %d: short ranges from %d, more than a round before the end", threads, n, grain, tail, ranges[short][0])
				}
				if grain > tail && n > (threads+1)*grain && (short < 0 || n-ranges[short][0] < threads*grain) {
					t.Errorf("threads %d n %d grain %d tail %d: the last round is not cut (short from %d)", threads, n, grain, tail, short)
				}
			}
		}
		p.Close()
	}
}

// TestNoAllocs holds the per-token hot paths to zero allocations.
func TestNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	const n, rows, cols = 5, 200, 72
	m := newMats(r, n, rows, cols, false)
	p := NewPool(2)
	defer p.Close()
	body := func(lo, hi int) {}
	v, w := randVec(r, cols), randVec(r, cols)
	cos, sin := randVec(r, 8), randVec(r, 8)
	for name, f := range map[string]func(){
		"MatVecF16":      func() { MatVecF16(m.y, m.w16, m.x, rows, cols) },
		"MatVecF32":      func() { MatVecF32(m.y, m.w32, m.x, rows, cols) },
		"MatMulF16":      func() { MatMulF16(m.y, m.x, m.w16, n, rows, cols) },
		"MatMulF32":      func() { MatMulF32(m.y, m.x, m.w32, n, rows, cols) },
		"Pool.MatVecF16": func() { p.MatVecF16(m.y, m.w16, m.x, rows, cols) },
		"Pool.MatMulF16": func() { p.MatMulF16(m.y, m.x, m.w16, n, rows, cols) },
		"Pool.Parallel":  func() { p.Parallel(100, 10, body) },
		"vector ops": func() {
			_ = Dot(v, w) + Sum(v)
			RMSNorm(v, v, w, 1e-6)
			Softmax(v)
			SwiGLU(v, v, w)
			RoPE(v, 9, 8, cos, sin)
			Axpy(v, 0.5, w)
			RowF16(v, m.w16, 1, cols)
		},
	} {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// TestPoolWakesParkedWorkers pauses between calls long enough for the
// workers to stop spinning and park, so every call must wake them, and
// checks that each worker really took part (the chunks block until all
// threads have arrived, which only happens if every worker woke up).
func TestPoolWakesParkedWorkers(t *testing.T) {
	threads := min(runtime.GOMAXPROCS(0), 4)
	if threads < 2 {
		threads = 2 // still correct, just without spinning
	}
	p := NewPool(threads)
	defer p.Close()
	for round := 0; round < 5; round++ {
		time.Sleep(spinDuration + 20*time.Millisecond) // longer than the spin
		var arrived, timedOut atomic.Int32
		var sum atomic.Int64
		// A worker that is never woken would hang the call: watch it.
		watchdog := time.AfterFunc(10*time.Second, func() {
			panic("Pool.Parallel did not return: a parked worker was never woken")
		})
		p.Parallel(threads, 1, func(lo, hi int) {
			arrived.Add(1)
			deadline := time.Now().Add(2 * time.Second)
			for arrived.Load() < int32(threads) {
				if time.Now().After(deadline) {
					timedOut.Add(1) // some worker never woke up
					break
				}
				runtime.Gosched()
			}
			sum.Add(int64(hi - lo))
		})
		watchdog.Stop()
		if timedOut.Load() != 0 || sum.Load() != int64(threads) {
			t.Fatalf("round %d: only %d of %d threads arrived together, %d items done", round, arrived.Load(), threads, sum.Load())
		}
	}
}

// TestPoolParallelSlots checks that ParallelSlots covers the range once, that every slot is in
// [0, Threads()) and that no two goroutines hold one slot at the same time (each item marks its
// slot busy while it runs; an item that finds it busy fails).
func TestPoolParallelSlots(t *testing.T) {
	for _, threads := range []int{1, 3, 8} {
		p := NewPool(threads)
		busy := make([]atomic.Int32, threads)
		for _, n := range []int{1, 5, 999} {
			hits := make([]atomic.Int32, n)
			p.ParallelSlots(n, 1, func(slot, lo, hi int) {
				if slot < 0 || slot >= threads {
					t.Errorf("threads %d: slot %d", threads, slot)
					return
				}
				if !busy[slot].CompareAndSwap(0, 1) {
					t.Errorf("threads %d: slot %d used by two goroutines at once", threads, slot)
					return
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
				for range 200 { // hold the slot long enough for an overlap to show
					runtime.Gosched()
				}
				busy[slot].Store(0)
			})
			for i := range hits {
				if hits[i].Load() != 1 {
					t.Fatalf("threads %d n %d: index %d ran %d times", threads, n, i, hits[i].Load())
				}
			}
		}
		p.Close()
	}
}

// TestPoolPanicReachesCaller panics in a chunk a worker runs: the panic must come out of the
// call on the caller's goroutine, where it can be recovered, after every chunk is done, and the
// pool must work afterwards. Raised on the worker's goroutine, it would kill the process.
func TestPoolPanicReachesCaller(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	// A worker that starts after a call began sits that call out: wait until workers take part.
	var workerRan atomic.Bool
	for deadline := time.Now().Add(5 * time.Second); !workerRan.Load() && time.Now().Before(deadline); {
		p.ParallelSlots(8, 1, func(slot, lo, hi int) {
			if slot != 0 {
				workerRan.Store(true)
			}
			time.Sleep(time.Millisecond)
		})
	}
	workerRan.Store(false)
	var done atomic.Int32
	fn := func(slot, lo, hi int) {
		defer done.Add(int32(hi - lo))
		if slot != 0 {
			workerRan.Store(true)
			panic("a worker's chunk failed")
		}
		// Hold the caller back until a worker has taken a chunk, so the panic is a worker's.
		for deadline := time.Now().Add(5 * time.Second); !workerRan.Load() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	got := func() (r any) {
		defer func() { r = recover() }()
		p.ParallelSlots(64, 1, fn)
		return nil
	}()
	if !workerRan.Load() {
		t.Fatal("no worker took a chunk in 5 s")
	}
	pe, ok := got.(*PanicError)
	if !ok || pe.Value != "a worker's chunk failed" || !strings.Contains(string(pe.Stack), "TestPoolPanicReachesCaller") {
		t.Fatalf("the call panicked with %#v; want a *PanicError with the worker's value and stack", got)
	}
	if n := done.Load(); n != 64 {
		t.Errorf("the call returned after %d of 64 items", n)
	}
	hits := make([]atomic.Int32, 100)
	p.Parallel(100, 3, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			hits[i].Add(1)
		}
	})
	for i := range hits {
		if hits[i].Load() != 1 {
			t.Fatalf("after the panic, item %d ran %d times", i, hits[i].Load())
		}
	}
}
