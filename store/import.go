package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/regfile"
)

// Add installs tmp, a bundle file the caller has just written into TempDir (a model packed on
// first use, `anepack --store`), as e.Reference: it hashes the file once (progress, if set,
// follows), fills in e.Digest and e.Size, moves it into blobs/ and names it. It returns the
// entry and the blob path. tmp no longer exists afterwards.
//
// The blob is also stamped as verified (see verified.go), so that the next run maps it without
// hashing it again. A stamp normally waits until a file's modification time is older than the
// racy window; a freshly written file is not, so Add sets the blob's modification time back
// past the window first. That is safe here because the store owns the file: it is read-only
// from the moment it is hashed, and any later write would set the modification time to the
// present, which the stamp would then no longer match.
func (s *Store) Add(ctx context.Context, tmp string, e Entry, progress func(done, total int64)) (Entry, string, error) {
	before, err := identity(tmp)
	if err != nil {
		os.Remove(tmp)
		return Entry{}, "", err
	}
	digest, size, err := HashFile(ctx, tmp, progress)
	if err != nil {
		os.Remove(tmp)
		return Entry{}, "", err
	}
	e.Digest, e.Size = digest, size
	after, err := identity(tmp)
	if err != nil || after != before {
		os.Remove(tmp)
		return Entry{}, "", fmt.Errorf("store: %s changed while it was being hashed; not installed", tmp)
	}
	p, err := s.InstallHashed(ctx, tmp, e)
	if err != nil {
		return Entry{}, "", err
	}
	s.vouch(digest, p)
	return e, p, nil
}

// vouch stamps a blob this process has just hashed (see Add).
func (s *Store) vouch(digest, path string) {
	old := time.Now().Add(-2 * racyWindow)
	if os.Chtimes(path, old, old) == nil {
		s.stamp(digest, path)
	}
}

// Import brings the bundle file src from outside the store in as e.Reference: a hard link
// when src is on the store's file system (no copy, no extra space; src's mode and times are
// left alone, and since writers replace bundles by renaming a new file into place, the link
// keeps the content it was hashed with), a copy otherwise. The content is hashed once; e.Digest
// and e.Size are filled in from it. It returns the entry and the blob path.
func (s *Store) Import(ctx context.Context, src string, e Entry, progress func(done, total int64)) (Entry, string, error) {
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return Entry{}, "", err
	}
	// A hard link to a named pipe would succeed and then block the hashing.
	fi, err := os.Stat(src)
	if err != nil {
		return Entry{}, "", err
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, "", fmt.Errorf("store: cannot import %s: %w", src, regfile.NotRegular(fi.Mode()))
	}
	f, err := os.CreateTemp(s.TempDir(), "import-*")
	if err != nil {
		return Entry{}, "", diskErr(err, s.dir)
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		// Another file system (or one without hard links): copy, and the copy is ours.
		if err := fileutil.CopyFile(ctx, src, tmp); err != nil {
			os.Remove(tmp)
			return Entry{}, "", diskErr(err, s.dir)
		}
		return s.Add(ctx, tmp, e, progress)
	}
	digest, size, err := HashFile(ctx, tmp, progress)
	if err != nil {
		os.Remove(tmp)
		return Entry{}, "", err
	}
	e.Digest, e.Size = digest, size
	p, err := s.installLinked(ctx, tmp, e)
	if err != nil {
		return Entry{}, "", err
	}
	return e, p, nil
}
