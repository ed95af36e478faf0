package remote

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anepack/anepack/store"
)

// TestPullDiskFull runs a pull into a store on a real, small tmpfs, mounted in a private
// mount namespace of a child process (as root, or through a user namespace otherwise), so the
// kernel itself answers ENOSPC. Two cases: the space check refuses before downloading, and a
// disk that fills up during the download (another file grows meanwhile).
func TestPullDiskFull(t *testing.T) {
	bundle := tinyBundle(t)
	mnt := t.TempDir()
	cmd := helperCmd(t, "diskfull", mnt, bundle)
	cmd.Args = append(cmd.Args, "-test.v") // show the child's log lines
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("disk-full helper: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// helperDiskFull is the child of TestPullDiskFull: args are the mount point and the bundle.
func helperDiskFull(t *testing.T, args []string) {
	mnt, bundle := args[0], args[1]
	// Keep our mounts out of the parent's namespace, then mount a 48 MiB tmpfs.
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making mounts private: %v", err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=48m"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", mnt, err)
	}
	defer syscall.Unmount(mnt, 0)
	ctx := context.Background()
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	fill := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fill && r.Method == http.MethodGet {
			fill = false
			// Another program takes 20 MiB of the disk while we download.
			if err := os.WriteFile(filler, make([]byte, 20<<20), 0o644); err != nil {
				t.Errorf("filler: %v", err)
			}
		}
		http.ServeContent(w, r, "tiny.aneb", bundleTime, bytes.NewReader(data))
	}))
	defer srv.Close()
	digest, _, _ := store.HashFile(ctx, bundle, nil)

	// 1. Not enough room at all: refused before the first byte.
	small := filepath.Join(mnt, "small")
	os.WriteFile(filepath.Join(mnt, "big"), make([]byte, 30<<20), 0o644)
	st, err := store.Open(small)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Store: st, Digest: digest, Backoff: 1}
	_, err = Pull(ctx, srv.URL+"/tiny.aneb", opts)
	if !errors.Is(err, store.ErrDiskFull) || !strings.Contains(err.Error(), store.EnvHome) {
		t.Fatalf("pull onto a disk without room: %v", err)
	}
	t.Logf("space check: %v", err)
	os.Remove(filepath.Join(mnt, "big"))
	os.RemoveAll(small)

	// 2. The disk fills up during the download: a real ENOSPC from write.
	st, err = store.Open(filepath.Join(mnt, "store"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Store = st
	fill = true
	_, err = Pull(ctx, srv.URL+"/tiny.aneb", opts)
	if !errors.Is(err, syscall.ENOSPC) || !store.IsDiskFull(err) || !strings.Contains(err.Error(), "kept") {
		t.Fatalf("pull onto a disk that fills up: %v", err)
	}
	t.Logf("disk filled up: %v", err)
	if v := visible(t, st); len(v) != 0 {
		t.Fatalf("a pull that ran out of space left %v visible", v)
	}
	// Free the space: the same pull resumes and completes.
	os.Remove(filler)
	p, err := Pull(ctx, srv.URL+"/tiny.aneb", opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed == 0 {
		t.Errorf("the pull after freeing space started over")
	}
	sameFile(t, bundle, p.Path)
}
