package stall

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// feed adds n bytes every 5 ms for d.
func feed(m *Meter, n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		m.Add(n)
	}
}

// TestTrickleStalls: a steady stream above the minimum rate never fires; a trickle below it
// does, within two windows, although bytes keep arriving.
func TestTrickleStalls(t *testing.T) {
	var cancelled atomic.Int32
	m := Start(Policy{Window: 50 * time.Millisecond, MinRate: 4000}, func() { cancelled.Add(1) }) // 200 bytes a window
	defer m.Stop()
	feed(m, 100, 300*time.Millisecond) // about 1000 bytes a window
	if m.Fired() {
		t.Fatalf("fired on a steady stream: %s", m.Reason())
	}
	start := time.Now()
	for !m.Fired() && time.Since(start) < 2*time.Second {
		feed(m, 1, 10*time.Millisecond) // about 10 bytes a window
	}
	if !m.Fired() || cancelled.Load() != 1 {
		t.Fatalf("a trickle did not stall (fired %v, cancelled %d times)", m.Fired(), cancelled.Load())
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("took %v to notice the trickle", took)
	}
	if r := m.Reason(); !strings.Contains(r, "below the minimum of 200") {
		t.Errorf("reason %q", r)
	}
}

// TestSilenceAndOptions: silence fires with "no data"; a negative MinRate accepts any byte; a
// stopped Meter never fires; Restart starts a fresh window.
func TestSilenceAndOptions(t *testing.T) {
	m := Start(Policy{Window: 20 * time.Millisecond}, func() {})
	time.Sleep(100 * time.Millisecond)
	if !m.Fired() || m.Reason() != "no data for 20ms" {
		t.Errorf("silence: fired %v, %q", m.Fired(), m.Reason())
	}
	m.Stop()

	any := Start(Policy{Window: 30 * time.Millisecond, MinRate: -1}, func() {})
	feed(any, 1, 150*time.Millisecond)
	if any.Fired() {
		t.Error("MinRate -1: a byte per 5 ms stalled")
	}
	any.Stop()

	stopped := Start(Policy{Window: 10 * time.Millisecond}, func() { t.Error("a stopped Meter cancelled") })
	stopped.Stop()
	time.Sleep(50 * time.Millisecond)

	r := Start(Policy{Window: 60 * time.Millisecond, MinRate: -1}, func() {})
	defer r.Stop()
	time.Sleep(40 * time.Millisecond)
	r.Restart() // the headers took 40 ms: the body gets a whole window
	time.Sleep(40 * time.Millisecond)
	r.Add(1)
	time.Sleep(10 * time.Millisecond)
	if r.Fired() {
		t.Error("fired although the window after Restart brought a byte")
	}
	if (Policy{Window: 10 * time.Second}).minBytes() != 10*DefaultMinRate {
		t.Error("MinRate 0 is not DefaultMinRate")
	}
}
