package store

import (
	"errors"
	"fmt"

	"github.com/anepack/anepack/internal/fileutil"
)

var (
	// ErrNotFound is returned (wrapped) for a reference or digest the store does not hold.
	ErrNotFound = errors.New("not in the store")
	// ErrDiskFull is returned (wrapped) when the disk holding the store is full.
	ErrDiskFull = errors.New("no space left on the disk")
	// ErrAmbiguous is returned (wrapped) by Remove for a digest prefix that matches several blobs.
	ErrAmbiguous = errors.New("ambiguous digest prefix")
)

// CorruptError reports a blob whose content no longer matches its digest. The blob has been
// deleted by the time the error is returned (Deleted says whether that succeeded).
type CorruptError struct {
	Digest  string // the digest the blob is stored under
	Got     string // what its content hashes to
	Path    string
	Deleted bool
	// DeleteErr is why the blob could not be deleted, when Deleted is false.
	DeleteErr error
}

func (e *CorruptError) Error() string {
	if e.Deleted {
		return fmt.Sprintf("store: bundle %s is corrupt: its content hashes to %s; deleted %s, pull it again", e.Digest, e.Got, e.Path)
	}
	return fmt.Sprintf("store: bundle %s is corrupt: its content hashes to %s; could not delete %s (%v): remove it by hand", e.Digest, e.Got, e.Path, e.DeleteErr)
}

// diskErr turns ENOSPC and EDQUOT into an ErrDiskFull error that names the directory and
// how to get out of it; other errors pass through.
func diskErr(err error, dir string) error {
	if err == nil {
		return nil
	}
	if IsDiskFull(err) {
		return &diskFullError{dir: dir, err: err}
	}
	return err
}

// IsDiskFull reports whether err is (or wraps) ENOSPC, EDQUOT or ErrDiskFull.
func IsDiskFull(err error) bool {
	return fileutil.IsDiskFull(err) || errors.Is(err, ErrDiskFull)
}

type diskFullError struct {
	dir string
	err error
	// need and free are set when the shortage was found before writing.
	need, free int64
}

func (e *diskFullError) Error() string {
	if e.need > 0 {
		return fmt.Sprintf("store: need %d bytes but only %d are free on the disk holding %s; free some space or set %s to a folder on a larger disk", e.need, e.free, e.dir, EnvHome)
	}
	return fmt.Sprintf("%v: no space left on the disk holding %s; free some space or set %s to a folder on a larger disk", e.err, e.dir, EnvHome)
}

func (e *diskFullError) Unwrap() []error { return []error{ErrDiskFull, e.err} }

// DiskError wraps a write error in the store's temp area the way the store does (a full
// disk becomes an ErrDiskFull error saying where and what to do); for the transfer code.
func (s *Store) DiskError(err error) error { return diskErr(err, s.dir) }
