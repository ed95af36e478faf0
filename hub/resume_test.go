package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/internal/transfer"
)

// waitFor polls cond every 10 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResumeInNewProcess: a download process is killed mid-file (SIGKILL,
// no chance to clean up); a new process resumes from the .part file with a
// Range request and fetches only the missing bytes.
func TestResumeInNewProcess(t *testing.T) {
	const size, at = 2 << 20, 700 << 10
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Stall: []hubtest.StallFault{
		{File: "model.safetensors", At: at, For: time.Minute, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	b, _ := srv.Blob("Org/M", "main", "model.safetensors")
	cache := t.TempDir()
	part := filepath.Join(cache, "models--Org--M", "blobs", b.Etag+".part")

	child := childCmd(t, srv.URL, cache, "Org/M", "HUB_TEST_CHUNK=-1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child to write the bytes before the stall", func() bool { return fileSize(part) == at })
	child.Process.Kill()
	err := child.Wait()
	if child.ProcessState.Success() {
		t.Fatalf("the child finished (%v) instead of being killed mid-file", err)
	}
	waitFor(t, "the server to see the child gone", func() bool { return srv.InFlight() == 0 })
	srv.ResetRequests()
	c, log := newClient(t, srv)
	c.CacheDir, c.ChunkSize = cache, -1
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	gets := requests(srv, "cdn", "GET")
	if len(gets) != 1 || gets[0].Range != fmt.Sprintf("bytes=%d-%d", at, size-1) || gets[0].Bytes != size-at {
		t.Fatalf("resume requests %+v: want one GET of bytes %d-%d", gets, at, size-1)
	}
	if !strings.Contains(log.String(), "resuming from 716.8 kB") {
		t.Error("the resume was not logged")
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Error("the .part file is still there")
	}
}

// TestResumeChunksInNewProcess: the same with parallel chunks: the killed
// process's chunk progress (.part.json) lets the new one fetch only the rest
// of the unfinished chunk.
func TestResumeChunksInNewProcess(t *testing.T) {
	const size, chunk = 2 << 20, 256 << 10
	const at = 5*chunk + 50<<10 // inside chunk 5
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Stall: []hubtest.StallFault{
		{File: "model.safetensors", At: at, For: time.Minute, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	b, _ := srv.Blob("Org/M", "main", "model.safetensors")
	cache := t.TempDir()
	state := filepath.Join(cache, "models--Org--M", "blobs", b.Etag+".part.json")

	child := childCmd(t, srv.URL, cache, "Org/M", fmt.Sprintf("HUB_TEST_CHUNK=%d", chunk), "HUB_TEST_JOBS=4")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the saved state shows every chunk but the stalled one done,
	// and that one up to the stall.
	waitFor(t, "the child's chunk state", func() bool {
		st, err := transfer.ReadState(state)
		if err != nil || len(st.Units) != 8 {
			return false
		}
		for i, c := range st.Units {
			want := c[1]
			if i == 5 {
				want = at - c[0]
			}
			if c[2] != want {
				return false
			}
		}
		return true
	})
	child.Process.Kill()
	child.Wait()
	waitFor(t, "the server to see the child gone", func() bool { return srv.InFlight() == 0 })
	srv.ResetRequests()
	c, _ := newClient(t, srv)
	c.CacheDir, c.ChunkSize, c.Jobs = cache, chunk, 4
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	gets := requests(srv, "cdn", "GET")
	want := fmt.Sprintf("bytes=%d-%d", at, 6*chunk-1)
	if len(gets) != 1 || gets[0].Range != want {
		t.Fatalf("resume requests %+v: want one GET of %s", gets, want)
	}
}

// TestResumeFromPart: a .part left by an earlier run is continued with
// Range; a .part whose prefix is damaged fails the hash, is removed and the
// file is fetched again from scratch.
func TestResumeFromPart(t *testing.T) {
	const size = 200 << 10
	srv := hubtest.New(t, hubtest.Options{})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	b, _ := srv.Blob("Org/M", "main", "model.safetensors")
	for _, damaged := range []bool{false, true} {
		srv.ResetRequests()
		c, _ := newClient(t, srv)
		part := c.repoCache("Org/M").partPath(b.Etag)
		os.MkdirAll(filepath.Dir(part), 0o755)
		prefix := append([]byte(nil), data[:size/4]...)
		if damaged {
			prefix[10] ^= 1
		}
		os.WriteFile(part, prefix, 0o644)
		s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := s.File("model.safetensors")
		mustEqualFile(t, f.LocalPath, data)
		gets := requests(srv, "cdn", "GET")
		if gets[0].Range != fmt.Sprintf("bytes=%d-%d", size/4, size-1) {
			t.Errorf("damaged=%v: first GET %+v, want a resume", damaged, gets[0])
		}
		if want := map[bool]int{false: 1, true: 2}[damaged]; len(gets) != want {
			t.Errorf("damaged=%v: %d GETs, want %d", damaged, len(gets), want)
		}
	}
}

// TestConcurrentDownloadsShareBlob: two clients on one cache download a
// blob once; the second waits on the lock and then reuses it.
func TestConcurrentDownloadsShareBlob(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Stall: []hubtest.StallFault{
		{File: "model.safetensors", At: 1000, For: 300 * time.Millisecond, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", 100<<10)
	cache := t.TempDir()
	var wg sync.WaitGroup
	logs := make([]*logBuf, 2)
	errs := make([]error, 2)
	for i := range 2 {
		c, log := newClient(t, srv)
		c.CacheDir = cache
		logs[i] = log
		wg.Go(func() {
			if i == 1 {
				time.Sleep(100 * time.Millisecond) // start while the first holds the lock
			}
			s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
			if err == nil {
				f, _ := s.File("model.safetensors")
				mustEqualFile(t, f.LocalPath, data)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if n := len(requests(srv, "cdn", "GET")); n != 1 {
		t.Errorf("the blob was downloaded %d times", n)
	}
	waited := 0
	for _, l := range logs {
		if strings.Contains(l.String(), "another process is downloading it") {
			waited++
		}
	}
	if waited != 1 {
		t.Errorf("%d clients waited for the lock, want 1", waited)
	}
}

// TestCancelKeepsPart: cancelling the context (Ctrl-C) stops at once,
// returns context.Canceled and keeps the .part file; the next run resumes.
func TestCancelKeepsPart(t *testing.T) {
	const size, at = 1 << 20, 300 << 10
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Stall: []hubtest.StallFault{
		{File: "model.safetensors", At: at, For: time.Minute, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	b, _ := srv.Blob("Org/M", "main", "model.safetensors")
	c, _ := newClient(t, srv)
	c.ChunkSize = -1
	part := c.repoCache("Org/M").partPath(b.Etag)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the bytes before the stall", func() bool { return fileSize(part) == at })
		cancel()
	}()
	start := time.Now()
	_, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled download: %v after %v", err, time.Since(start))
	}
	if fileSize(part) != at {
		t.Fatalf(".part holds %d bytes, want %d", fileSize(part), at)
	}
	waitFor(t, "the server to see the client gone", func() bool { return srv.InFlight() == 0 })
	srv.ResetRequests()
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	if gets := requests(srv, "cdn", "GET"); len(gets) != 1 || rangeStart(gets[0].Range) != at {
		t.Fatalf("requests after cancel %+v", gets)
	}
}
