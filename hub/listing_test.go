package hub

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// heapPeak samples the heap every millisecond until stop is called, and returns the highest
// value seen minus the heap at the start. The collector runs often meanwhile (GOGC 20), so
// the samples follow the live heap rather than the garbage the pacer lets pile up.
func heapPeak() (stop func() uint64) {
	old := debug.SetGCPercent(20)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
				peak.Store(m.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); debug.SetGCPercent(old); return peak.Load() }
}

// TestHugeListingMemory lists a repo whose model info is about 90 MB (430,000 files). The
// listing used to be read whole and then unmarshalled, and Snapshot then marshalled a map of it
// for the cache: the live heap grew by 240 MiB to list it and 480 MiB to snapshot it (over a
// gigabyte of resident memory with the collector's default pacing). It is now decoded and
// written as a stream, entry by entry, so the heap grows by about what the FileInfos take
// (some 250 bytes each with their strings: about 110 MiB here, 160 MiB at the peak).
//
// The listing is measured in a child process (this test binary, re-run with the fake Hub's
// address), so that the parent's memory stays small: a child's peak resident size counts its
// parent's (see TestPeakRSS).
func TestHugeListingMemory(t *testing.T) {
	const n = 430_000
	if endpoint := os.Getenv("HUB_LISTING_CHILD"); endpoint != "" {
		measureHugeListing(t, endpoint, n)
		return
	}
	srv := hubtest.New(t, hubtest.Options{})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Huge", Files: []hubtest.File{{Path: "config.json", Data: []byte(`{}`)}}, Phantoms: n})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHugeListingMemory$", "-test.v")
	cmd.Env = append(os.Environ(), "HUB_LISTING_CHILD="+srv.URL)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("the child failed: %v", err)
	}
}

// measureHugeListing lists and snapshots the n-file repo at endpoint, checking how far the heap
// grows.
func measureHugeListing(t *testing.T, endpoint string, n int) {
	c, _ := newClient(t, nil)
	c.Endpoint = endpoint
	stop := heapPeak()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	files, err := c.ListFiles(context.Background(), "Org/Huge", "")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	peak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != n+1 {
		t.Fatalf("%d files; want %d", len(files), n+1)
	}
	total := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d files: heap peak +%d MiB, %d MiB allocated in all", len(files), peak>>20, total>>20)
	if peak > 200<<20 {
		t.Errorf("the heap grew by %d MiB for a 90 MB listing", peak>>20)
	}
	runtime.KeepAlive(files)

	// Snapshot also records the listing in the cache (trees/<commit>.json).
	files = nil
	stop = heapPeak()
	snap, err := c.Snapshot(context.Background(), "Org/Huge", "", PackFilter)
	peak = stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot: heap peak +%d MiB", peak>>20)
	if len(snap.Files) != 1 || peak > 200<<20 {
		t.Errorf("snapshot of %d files, heap peak +%d MiB", len(snap.Files), peak>>20)
	}
}

// TestListingLimits: a listing naming more files than maxListingFiles, or larger than
// maxListingBytes, is refused with an error that says so (both limits lowered for the test).
func TestListingLimits(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Many", Files: []hubtest.File{{Path: "config.json", Data: []byte(`{}`)}}, Phantoms: 2000})
	c, _ := newClient(t, srv)
	defer func(n int, b int64) { maxListingFiles, maxListingBytes = n, b }(maxListingFiles, maxListingBytes)

	maxListingFiles = 1000
	_, err := c.ListFiles(context.Background(), "Org/Many", "")
	if err == nil || !strings.Contains(err.Error(), "names more than 1000 files") {
		t.Errorf("too many files: %v", err)
	}
	maxListingFiles, maxListingBytes = 1_000_000, 64<<10
	_, err = c.ListFiles(context.Background(), "Org/Many", "")
	if err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("too many bytes: %v", err)
	}
	maxListingBytes = 256 << 20
	if files, err := c.ListFiles(context.Background(), "Org/Many", ""); err != nil || len(files) != 2001 {
		t.Errorf("within the limits: %d files, %v", len(files), err)
	}
}
