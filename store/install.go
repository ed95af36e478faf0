package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/regfile"
)

// Install hashes tmp (a file in TempDir), checks that it matches e.Digest and moves it into
// the store (see InstallHashed). On a mismatch tmp is deleted and nothing is installed.
func (s *Store) Install(ctx context.Context, tmp string, e Entry) (string, error) {
	got, size, err := HashFile(ctx, tmp, nil)
	if err != nil {
		return "", err
	}
	if got != e.Digest {
		os.Remove(tmp)
		return "", fmt.Errorf("store: %s hashes to %s, not %s; not installed", tmp, got, e.Digest)
	}
	e.Size = size
	return s.InstallHashed(ctx, tmp, e)
}

// InstallHashed moves tmp, a file in TempDir whose content the caller has hashed to e.Digest
// while writing it, into the store: it fsyncs the file, makes it read-only, renames it to
// blobs/sha256/<hex> (replacing an existing copy) and, when e.Reference is set, records the
// reference, all under the store lock. tmp no longer exists afterwards (on failure it is
// removed). It returns the blob path.
func (s *Store) InstallHashed(ctx context.Context, tmp string, e Entry) (path string, err error) {
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if filepath.Dir(tmp) != s.TempDir() {
		return "", fmt.Errorf("store: cannot install %s: not in the store's work area %s", tmp, s.TempDir())
	}
	dst, err := s.BlobPath(e.Digest)
	if err != nil {
		return "", err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", diskErr(fmt.Errorf("store: syncing %s: %w", tmp, err), s.dir)
	}
	if e.Size != 0 && e.Size != fi.Size() {
		return "", fmt.Errorf("store: %s has %d bytes, expected %d; not installed", tmp, fi.Size(), e.Size)
	}
	e.Size = fi.Size()
	if err := os.Chmod(tmp, 0o444); err != nil {
		return "", err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := renameInto(tmp, dst); err != nil {
		return "", diskErr(fmt.Errorf("store: installing %s: %w", dst, err), s.dir)
	}
	fileutil.SyncDir(s.blobDir())
	if e.Reference != "" {
		if err := s.writeRef(e); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// renameInto renames tmp onto dst and makes sure tmp is gone. When both are hard links of one
// file (a bundle imported again from the file the store already links), rename(2) succeeds
// and does nothing: tmp would stay in the work area, an extra link that keeps the bundle's
// bytes on disk after the blob is removed.
func renameInto(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// InstallFrom brings a file from outside the store (e.g. a verified file in the Hugging Face
// cache) in as e.Digest: a hard link when src is on the same file system (no copy, no extra
// space), a copy otherwise. Either way the content is hashed and must match e.Digest.
func (s *Store) InstallFrom(ctx context.Context, src string, e Entry) (string, error) {
	// A Hugging Face snapshot file is a symlink to its blob: link the blob itself.
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", err
	}
	// A hard link to a named pipe would succeed and then block the hashing.
	if fi, err := os.Stat(src); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("store: cannot install %s: %w", src, regfile.NotRegular(fi.Mode()))
	}
	f, err := os.CreateTemp(s.TempDir(), "install-*")
	if err != nil {
		return "", diskErr(err, s.dir)
	}
	tmp := f.Name()
	f.Close()
	os.Remove(tmp)
	if err := os.Link(src, tmp); err == nil {
		got, size, err := HashFile(ctx, tmp, nil)
		if err != nil {
			os.Remove(tmp)
			return "", err
		}
		if got != e.Digest {
			os.Remove(tmp)
			return "", fmt.Errorf("store: %s hashes to %s, not %s; not installed", src, got, e.Digest)
		}
		e.Size = size
		// A hard link shares the inode with src: leave its mode alone.
		return s.installLinked(ctx, tmp, e)
	}
	if err := fileutil.CopyFile(ctx, src, tmp); err != nil {
		os.Remove(tmp)
		return "", diskErr(err, s.dir)
	}
	return s.Install(ctx, tmp, e)
}

// installLinked is InstallHashed for a hard link: no fsync (src's data is already durable
// where it came from) and no chmod.
func (s *Store) installLinked(ctx context.Context, tmp string, e Entry) (string, error) {
	dst, err := s.BlobPath(e.Digest)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	defer unlock()
	if err := renameInto(tmp, dst); err != nil {
		os.Remove(tmp)
		return "", diskErr(fmt.Errorf("store: installing %s: %w", dst, err), s.dir)
	}
	fileutil.SyncDir(s.blobDir())
	if e.Reference != "" {
		if err := s.writeRef(e); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// Get returns the entry for ref and the path of its bundle after verifying the whole file
// (see Verify). progress, if set, follows the hashing.
func (s *Store) Get(ctx context.Context, ref string, progress func(done, total int64)) (Entry, string, error) {
	e, err := s.Lookup(ref)
	if err != nil {
		return Entry{}, "", err
	}
	p, err := s.Verify(ctx, e.Digest, progress)
	return e, p, err
}

// Verify hashes the blob and returns its path when the content matches the digest. A blob
// hashed before whose file is unchanged since (see verified.go) is not hashed again. The error
// wraps ErrNotFound when the blob is absent; on a mismatch the blob is deleted and the error
// is a *CorruptError saying so.
func (s *Store) Verify(ctx context.Context, digest string, progress func(done, total int64)) (string, error) {
	p, err := s.BlobPath(digest)
	if err != nil {
		return "", err
	}
	if s.stamped(digest, p) {
		return p, nil
	}
	got, _, err := HashFile(ctx, p, progress)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("store: bundle %s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: verifying %s: %w", p, err)
	}
	if got == digest {
		s.stamp(digest, p)
		return p, nil
	}
	s.unstamp(digest)
	ce := &CorruptError{Digest: digest, Got: got, Path: p}
	ce.DeleteErr = s.deleteCorrupt(ctx, p)
	ce.Deleted = ce.DeleteErr == nil
	s.logf("%v", ce)
	return "", ce
}

// deleteCorrupt removes a blob that failed verification, under the store lock.
func (s *Store) deleteCorrupt(ctx context.Context, p string) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fileutil.SyncDir(s.blobDir())
	return nil
}
