//go:build unix

package fileutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on path, creating the file and its folder. It is the same
// lock huggingface_hub's filelock takes, so anepack and Python tools never write the same
// file at once. It polls (1 ms doubling to 100 ms) so that ctx can cancel the wait; onWait,
// if set, is called once when the lock is busy. The returned function releases it.
//
// On a file system without flock (some network mounts) it goes on unlocked, as
// huggingface_hub does: the write-then-rename guarantees still hold, and refusing to work
// would help nobody.
func Lock(ctx context.Context, path string, onWait func()) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	waited := false
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
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
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// TryLock takes the flock on path if it is free; ok is false when another process holds it.
// A missing lock file is free (nobody holds it) and release is then a no-op.
func TryLock(path string) (release func(), ok bool) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return func() {}, true
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, true
}

// FreeSpace reports the bytes available to this user on the file system holding dir, or its
// nearest existing parent (a cache folder that is not created yet); ok is false where this
// cannot be known.
func FreeSpace(dir string) (int64, bool) {
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
