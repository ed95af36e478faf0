//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// freeSpace reports the bytes available to this user on the file system
// holding dir (or its nearest existing parent).
func freeSpace(dir string) (int64, bool) {
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil {
			return int64(st.Bavail) * int64(st.Bsize), true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0, false
		}
		dir = parent
	}
}

func isQuotaErr(err error) bool { return errors.Is(err, syscall.EDQUOT) }

// lockFile takes an exclusive flock on path, the same lock huggingface_hub's
// filelock takes on .locks/models--Org--Name/<etag>.lock, so anepack and
// Python never write the same blob at once. It polls so that ctx can cancel
// the wait; onWait is called once if the lock is busy.
func lockFile(ctx context.Context, path string, onWait func()) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, diskErr(err, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, diskErr(err, path)
	}
	waited := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			// A file system without flock support: go on unlocked, as
			// huggingface_hub does, rather than refusing to download.
			return func() { f.Close() }, nil
		}
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
