package hub

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// TestTrickleResumes: a CDN connection that trickles (a byte every 20 ms, 50 bytes a second)
// is judged stalled after one window, because it brings less than MinRate, and the download
// resumes on a new connection. The stall timer used to restart on every byte, so the trickle
// would have taken the rest of the file at 50 bytes a second (about 45 minutes here).
func TestTrickleResumes(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Trickle: []hubtest.TrickleFault{
		{File: "model.safetensors", At: 60 << 10, Every: 20 * time.Millisecond, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", 200<<10)
	c, log := newClient(t, srv)
	c.StallTimeout = 300 * time.Millisecond // MinRate 1 KiB/s: 307 bytes a window
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	if !strings.Contains(log.String(), "below the minimum of 307") {
		t.Errorf("the trickle was not logged as too slow:\n%s", log.String())
	}
}

// TestTrickleGivesUp: a server that trickles on every connection exhausts the retries (a
// stalled attempt does not count as progress, whatever it brought) and the download fails
// with an error that says so, within seconds.
func TestTrickleGivesUp(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Trickle: []hubtest.TrickleFault{
		{File: "model.safetensors", At: 1 << 10, Every: 10 * time.Millisecond}}}})
	oneFileRepo(t, srv, "Org/M", 200<<10)
	c, _ := newClient(t, srv)
	c.StallTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	if err == nil || !strings.Contains(err.Error(), "stalled") || ctx.Err() != nil {
		t.Fatalf("got %v; want the download to fail as stalled", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v to give up", el)
	}
	// A rate the link can sustain is not a stall: with MinRate negative, any byte is progress
	// (checked on a fresh server that does not trickle).
	srv2 := hubtest.New(t, hubtest.Options{})
	_, data := oneFileRepo(t, srv2, "Org/N", 64<<10)
	c2, _ := newClient(t, srv2)
	c2.StallTimeout, c2.MinRate = 200*time.Millisecond, -1
	s, err := c2.Snapshot(ctx, "Org/N", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
}
