package serve

import (
	"context"
	"errors"
	"sync"

	"github.com/anepack/anepack/runtime"
)

// errQueueFull is returned by acquire when every slot is busy and the queue is full.
var errQueueFull = errors.New("queue full")

// slot is one session (one KV cache) that runs one generation at a time.
type slot struct {
	id   int
	sess *runtime.Session
}

// slots hands out the server's sessions: at most len(all) generations run at once, at most
// queue requests wait for one in arrival order, and the rest are refused at once (429) so that
// a burst cannot pile up unbounded memory and latency.
type slots struct {
	mu      sync.Mutex
	all     []*slot
	free    []*slot
	waiters []chan *slot // FIFO; each buffered 1 so a hand-over never blocks
	queue   int
}

func newSlots(all []*slot, queue int) *slots {
	return &slots{all: all, free: append([]*slot(nil), all...), queue: queue}
}

// acquire returns a free slot, waiting in the queue while there is none. Among free slots it
// picks the one whose cached tokens share the longest prefix with prompt, so a chat's next turn
// usually lands where its history is cached. It fails with errQueueFull when the queue is full
// and with ctx's error when ctx ends while waiting.
func (q *slots) acquire(ctx context.Context, prompt []int) (*slot, error) {
	q.mu.Lock()
	if len(q.free) > 0 && len(q.waiters) == 0 {
		best := 0
		bestLen := -1
		for i, sl := range q.free {
			if n := sharedPrefix(sl.sess.Tokens(), prompt); n > bestLen {
				best, bestLen = i, n
			}
		}
		sl := q.free[best]
		q.free = append(q.free[:best], q.free[best+1:]...)
		q.mu.Unlock()
		return sl, nil
	}
	if len(q.waiters) >= q.queue {
		q.mu.Unlock()
		return nil, errQueueFull
	}
	ch := make(chan *slot, 1)
	q.waiters = append(q.waiters, ch)
	q.mu.Unlock()

	select {
	case sl := <-ch:
		return sl, nil
	case <-ctx.Done():
		q.mu.Lock()
		for i, w := range q.waiters {
			if w == ch {
				q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
				q.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		q.mu.Unlock()
		// A slot was handed over just as ctx ended: pass it on.
		q.release(<-ch)
		return nil, ctx.Err()
	}
}

// release returns a slot: to the longest-waiting request, or to the free list.
func (q *slots) release(sl *slot) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		ch := q.waiters[0]
		q.waiters = q.waiters[1:]
		ch <- sl
		return
	}
	q.free = append(q.free, sl)
}

// counts returns the generations running and the requests waiting.
func (q *slots) counts() (running, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.all) - len(q.free), len(q.waiters)
}

// close releases every session. The caller makes sure no slot is in use.
func (q *slots) close() error {
	var errs []error
	for _, sl := range q.all {
		errs = append(errs, sl.sess.Close())
	}
	return errors.Join(errs...)
}

func sharedPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
