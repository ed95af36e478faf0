// Package stall decides when a download has stalled: when a whole window passes with fewer
// than MinRate bytes per second arriving, which a trickle cannot satisfy and any working link
// does. A timer reset on every byte would let a server that sends one byte a second hold a
// connection (and a download slot) forever.
package stall

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMinRate is the slowest transfer, in bytes per second, that counts as progress when a
// Policy leaves MinRate at 0: far below any real link, far above a trickle.
const DefaultMinRate = 1024

// Policy says what progress a transfer must make.
type Policy struct {
	// Window is how long progress is measured over; a transfer is judged at the end of each.
	Window time.Duration
	// MinRate is the least bytes per second averaged over a window (DefaultMinRate when 0;
	// negative: any byte in a window is progress).
	MinRate int64
}

// minBytes is what one window must bring.
func (p Policy) minBytes() int64 {
	rate := p.MinRate
	if rate == 0 {
		rate = DefaultMinRate
	}
	return max(1, int64(float64(rate)*p.Window.Seconds()))
}

// Meter watches one transfer under a Policy. Count the bytes as they arrive; when a window
// ends with fewer than the policy's minimum, the Meter calls cancel once and Fired reports
// true. A Meter must be stopped.
type Meter struct {
	p      Policy
	min    int64
	cancel func()
	n      atomic.Int64 // bytes since the window began
	fired  atomic.Bool

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	got     int64 // bytes in the window that fired
}

// Start begins the first window now. Until the first byte (response headers included, which
// callers do not count) the rule is the same: the window must bring the minimum.
func Start(p Policy, cancel func()) *Meter {
	m := &Meter{p: p, min: p.minBytes(), cancel: cancel}
	m.mu.Lock()
	m.timer = time.AfterFunc(p.Window, m.tick)
	m.mu.Unlock()
	return m
}

// tick judges the window that just ended and starts the next one.
func (m *Meter) tick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	got := m.n.Swap(0)
	if got < m.min {
		m.got = got
		m.stopped = true
		m.fired.Store(true)
		m.cancel()
		return
	}
	m.timer.Reset(m.p.Window)
}

// Add counts n bytes received.
func (m *Meter) Add(n int) { m.n.Add(int64(n)) }

// Restart begins a new window now, for a new phase of the transfer (the body, once the
// headers took part of the last window).
func (m *Meter) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.n.Store(0)
	m.timer.Reset(m.p.Window)
}

// Stop ends the watch; the Meter no longer fires.
func (m *Meter) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	m.timer.Stop()
}

// Fired reports whether the Meter judged the transfer stalled (and called cancel).
func (m *Meter) Fired() bool { return m.fired.Load() }

// Reason describes the stall, for error messages: "no data for 10s", or "37 bytes in 10s, below
// the minimum of 10240".
func (m *Meter) Reason() string {
	m.mu.Lock()
	got := m.got
	m.mu.Unlock()
	if got == 0 {
		return fmt.Sprintf("no data for %v", m.p.Window)
	}
	return fmt.Sprintf("%d bytes in %v, below the minimum of %d", got, m.p.Window, m.min)
}
