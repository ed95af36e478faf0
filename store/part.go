package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anepack/anepack/internal/fileutil"
)

// Part is a download in progress in the work area: the partial file and the transfer's own
// state file, which survive the process so that a later pull resumes. The holder of a Part
// has the key's lock: no other process writes the same files meanwhile.
type Part struct {
	// Path is the partial file (tmp/<key>.part).
	Path string
	// StatePath is for the transfer's resume state (tmp/<key>.part.json).
	StatePath string
	release   func()
}

// OpenPart takes the lock for key (lowercase letters and digits, e.g. a digest's hex) and
// returns its part files, which may hold data from an earlier, interrupted transfer. If
// another process holds the lock, OpenPart waits (onWait is called once) until it is released
// or ctx is done. Close releases the lock.
func (s *Store) OpenPart(ctx context.Context, key string, onWait func()) (*Part, error) {
	if key == "" || len(key) > 128 {
		return nil, fmt.Errorf("store: invalid part key %q", key)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return nil, fmt.Errorf("store: invalid part key %q: only lowercase letters and digits", key)
		}
	}
	base := filepath.Join(s.TempDir(), key)
	release, err := fileutil.Lock(ctx, base+".lock", onWait)
	if err != nil {
		return nil, diskErr(err, s.dir)
	}
	return &Part{Path: base + ".part", StatePath: base + ".part.json", release: release}, nil
}

// Close releases the lock; the files stay for a later resume.
func (p *Part) Close() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// Discard deletes the partial file and the state (the transfer starts over or is done).
func (p *Part) Discard() error {
	err1 := os.Remove(p.Path)
	err2 := os.Remove(p.StatePath)
	if err1 != nil && !errors.Is(err1, os.ErrNotExist) {
		return err1
	}
	if err2 != nil && !errors.Is(err2, os.ErrNotExist) {
		return err2
	}
	return nil
}

// FreeSpace reports the bytes available on the store's file system (ok is false where this
// cannot be known).
func (s *Store) FreeSpace() (int64, bool) { return fileutil.FreeSpace(s.dir) }

// CheckSpace fails with an ErrDiskFull error when fewer than need bytes are free for the
// store, so that a pull stops before it starts rather than at 97%.
func (s *Store) CheckSpace(need int64) error {
	free, ok := s.FreeSpace()
	if !ok || free >= need {
		return nil
	}
	return &diskFullError{dir: s.dir, err: ErrDiskFull, need: need, free: free}
}
