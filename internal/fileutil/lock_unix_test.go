//go:build unix

package fileutil

import (
	"context"
	"path/filepath"
	"testing"
)

const lockWorks = true

// TestLock: a held lock makes Lock wait (onWait once, ctx ends the wait) and TryLock fail;
// released, both succeed.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".locks", "x.lock")
	if release, ok := TryLock(path); !ok {
		t.Fatal("TryLock on a missing file failed")
	} else {
		release()
	}
	unlock, err := Lock(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitLocked(t, path)
	if _, ok := TryLock(path); ok {
		t.Error("TryLock took a held lock")
	}
	unlock()
	release, ok := TryLock(path)
	if !ok {
		t.Fatal("TryLock failed on a released lock")
	}
	release()
}
