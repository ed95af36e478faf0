package hub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
)

// TestDiskFullWhileWriting: a write that fails with ENOSPC (the .part is
// made a link to /dev/full, which fails every write that way) becomes an
// ErrDiskFull that says where and what to do.
func TestDiskFullWhileWriting(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	oneFileRepo(t, srv, "Org/M", 50<<10)
	c, _ := newClient(t, srv)
	b, _ := srv.Blob("Org/M", "main", "model.safetensors")
	part := c.repoCache("Org/M").partPath(b.Etag)
	os.MkdirAll(filepath.Dir(part), 0o755)
	if err := os.Symlink("/dev/full", part); err != nil {
		t.Fatal(err)
	}
	_, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrDiskFull, "no space left", "HF_HUB_CACHE")
	// A request is recorded when its handler returns, which may be after the client has
	// already given up on the first failed write.
	waitFor(t, "the server to finish the request", func() bool { return srv.InFlight() == 0 })
	if n := len(requests(srv, "cdn", "GET")); n != 1 {
		t.Errorf("%d attempts: a full disk must not be retried", n)
	}
}

// TestDiskFullBeforeStart: when the file system reports less free space
// than the download needs, nothing is fetched.
func TestDiskFullBeforeStart(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	oneFileRepo(t, srv, "Org/M", 50<<10)
	c, _ := newClient(t, srv)
	c.statFree = func(string) (int64, bool) { return 10 << 10, true }
	_, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrDiskFull, "51.2 kB to download", "10.2 kB free", c.CacheDir)
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r.Path, "/api/") {
			t.Errorf("file request %s despite the full disk", r.Path)
		}
	}
}
