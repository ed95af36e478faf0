package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveLocal(t *testing.T) {
	ctx := context.Background()
	opts, _ := testOptions(t)
	bundle := tinyBundle(t)
	if p, err := Resolve(ctx, bundle, opts); err != nil || p != bundle {
		t.Errorf("Resolve(local) = %q, %v", p, err)
	}
	missing := filepath.Join(t.TempDir(), "nope.aneb")
	if _, err := Resolve(ctx, missing, opts); err == nil || !strings.Contains(err.Error(), "oci://") {
		t.Errorf("Resolve of a missing file: %v", err)
	}
	if _, err := Resolve(ctx, t.TempDir(), opts); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Resolve of a directory: %v", err)
	}
	if _, err := Resolve(ctx, "ftp://x/y.aneb", opts); err == nil || !strings.Contains(err.Error(), "unknown scheme") {
		t.Errorf("Resolve of an ftp URL: %v", err)
	}
}

// TestResolveRemote pulls on first use, reuses the store afterwards without any request
// (after hashing the bundle), and pulls again when the stored bundle turns out corrupt.
func TestResolveRemote(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	data, _ := os.ReadFile(bundle)
	fs := newFileServer(t, data)
	opts, lw := httpsOptions(t, fs)
	p1, err := Resolve(ctx, fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p1)
	n := fs.requests.Load()
	p2, err := Resolve(ctx, fs.url(), opts)
	if err != nil || p2 != p1 || fs.requests.Load() != n {
		t.Fatalf("second Resolve: %q, %v, %d new requests", p2, err, fs.requests.Load()-n)
	}
	// Corrupt the stored bundle: Resolve deletes it, says so, and pulls it again.
	os.Chmod(p1, 0o644)
	f, _ := os.OpenFile(p1, os.O_RDWR, 0)
	f.WriteAt([]byte{0xff, 0xff}, 100_000)
	f.Close()
	p3, err := Resolve(ctx, fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p3)
	if !strings.Contains(lw.String(), "is corrupt") || !strings.Contains(lw.String(), "pulling it again") {
		t.Errorf("the corruption was not reported: %s", lw)
	}
	if fs.requests.Load() == n {
		t.Error("no new download after the corruption")
	}
	list, _ := opts.Store.List()
	if len(list) != 1 || list[0].Missing {
		t.Errorf("List: %+v", list)
	}
}
