package hub

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
)

// recProgress records what a Snapshot reports.
type recProgress struct {
	mu            sync.Mutex
	files         int
	total, added  int64
	done          []string
	starts, ends  int
	negativeAdded bool
}

func (p *recProgress) Start(files int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.total = files, bytes
	p.starts++
}

func (p *recProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.added += n
	p.negativeAdded = p.negativeAdded || n < 0
}

func (p *recProgress) FileDone(path string, size int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = append(p.done, path)
}

func (p *recProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ends++
}

// TestProgressAccounting: the bytes reported add up to the total even when
// a file is resumed, restarted after corruption and fetched in chunks.
func TestProgressAccounting(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{
		Drop:    []hubtest.DropFault{{File: "model-00001-of-00002.safetensors", At: 100 << 10, Times: 1}},
		Corrupt: []hubtest.CorruptFault{{File: "model-00002-of-00002.safetensors", At: 5, Times: 1}},
	}})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: modelFiles()})
	c, _ := newClient(t, srv)
	c.ChunkSize = 64 << 10
	p := &recProgress{}
	c.Progress = p
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, f := range s.Files {
		want += f.Size
	}
	if p.starts != 1 || p.ends != 1 || p.files != len(packNames) || p.total != want || p.added != want ||
		len(p.done) != len(packNames) || !p.negativeAdded || s.BytesDownloaded != want {
		t.Fatalf("progress %+v, want %d files and %d bytes (with a negative Add for the restart)", p, len(packNames), want)
	}
	// Nothing to download: Start(0, 0), Finish.
	p2 := &recProgress{}
	c.Progress = p2
	if _, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	if p2.files != 0 || p2.added != 0 || p2.ends != 1 {
		t.Errorf("cached run reported %+v", p2)
	}
}

// TestProgressAndLog: a download that meets a failing CDN reports every file to Progress and
// says in Log that it tried again, one line per event.
func TestProgressAndLog(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.CDN, Code: 503, Times: 1}}}})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: modelFiles()})
	c, _ := newClient(t, srv)
	var log bytes.Buffer
	p := &recProgress{}
	c.Progress, c.Log = p, &log
	if _, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	if p.starts != 1 || p.ends != 1 || len(p.done) != len(packNames) {
		t.Errorf("progress %+v, want %d files", p, len(packNames))
	}
	out := log.String()
	if !strings.HasPrefix(out, "hub: ") || !strings.Contains(out, "attempt 2 of 4)\n") {
		t.Errorf("log lacks the retry line:\n%q", out)
	}
}
