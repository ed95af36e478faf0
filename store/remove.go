package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
)

// staleTemp is how old a work file that is not a partial download must be before RemoveTemp
// deletes it.
const staleTemp = 10 * time.Minute

// hookBeforeBlobRemoval, when set by a test, runs between deciding that no reference names
// a blob and deleting it: it widens the window a missing lock would expose.
var hookBeforeBlobRemoval func()

// Removed says what Remove deleted.
type Removed struct {
	Refs  []Entry  // references removed
	Blobs []string // digests of the blobs deleted
	// Freed is the bytes given back to the disk. Kept is the bytes of deleted blobs that stay
	// on disk because another hard link holds them: the file a bundle was imported from.
	Freed, Kept int64
}

// minPrefix is the shortest digest prefix (hex digits) Remove accepts, so that a typo does
// not remove a random bundle.
const minPrefix = 6

// Remove deletes a reference, or a bundle by digest. For a reference, its blob is deleted too
// when no other reference names it. For a digest ("sha256:<hex>", or a unique prefix of at
// least 6 hex digits after "sha256:") the blob and every reference naming it are deleted. The
// error wraps ErrNotFound when nothing matches and ErrAmbiguous for a prefix that matches
// several blobs.
func (s *Store) Remove(ctx context.Context, target string) (Removed, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Removed{}, err
	}
	defer unlock()
	entries, err := s.List()
	if err != nil {
		return Removed{}, err
	}
	var r Removed
	if strings.HasPrefix(target, "sha256:") {
		digest, err := s.matchDigest(target, entries)
		if err != nil {
			return r, err
		}
		for _, e := range entries {
			if e.Digest == digest && e.Reference != "" {
				if err := s.removeRef(e); err != nil {
					return r, err
				}
				r.Refs = append(r.Refs, e)
			}
		}
		return r, s.removeBlob(digest, &r)
	}
	e, err := s.Lookup(target)
	if err != nil {
		return r, err
	}
	if err := s.removeRef(e); err != nil {
		return r, err
	}
	r.Refs = append(r.Refs, e)
	for _, o := range entries {
		if o.Digest == e.Digest && o.Reference != "" && o.Reference != e.Reference {
			return r, nil // still named by another reference
		}
	}
	if hookBeforeBlobRemoval != nil {
		hookBeforeBlobRemoval()
	}
	return r, s.removeBlob(e.Digest, &r)
}

// matchDigest resolves a digest or digest prefix against the blobs and references.
func (s *Store) matchDigest(target string, entries []Entry) (string, error) {
	if IsDigest(target) {
		for _, e := range entries {
			if e.Digest == target {
				return target, nil
			}
		}
		return "", fmt.Errorf("store: %s: %w", target, ErrNotFound)
	}
	hex := strings.TrimPrefix(target, "sha256:")
	if len(hex) < minPrefix || !isLowerHex(hex) {
		return "", fmt.Errorf("store: %q is neither a digest (sha256:<64 hex digits>) nor a prefix of at least %d lowercase hex digits", target, minPrefix)
	}
	var found []string
	seen := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.Digest, target) && !seen[e.Digest] {
			seen[e.Digest] = true
			found = append(found, e.Digest)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("store: %s: %w", target, ErrNotFound)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("store: %s matches %d bundles (%s): %w", target, len(found), strings.Join(found, ", "), ErrAmbiguous)
}

func (s *Store) removeRef(e Entry) error {
	if err := os.Remove(s.refPath(e.Reference)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: removing %s: %w", e.Reference, err)
	}
	fileutil.SyncDir(s.refDir())
	return nil
}

func (s *Store) removeBlob(digest string, r *Removed) error {
	p, err := s.BlobPath(digest)
	if err != nil {
		return err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil // already gone (found corrupt earlier)
	}
	if err != nil {
		return err
	}
	// Links to the blob in the work area are what an import used to leave behind (renameInto):
	// they go with it, or its bytes would stay on disk.
	left := int64(links(fi)) - 1 - int64(s.removeLinksIn(s.TempDir(), fi))
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("store: removing %s: %w", p, err)
	}
	s.unstamp(digest)
	fileutil.SyncDir(s.blobDir())
	r.Blobs = append(r.Blobs, digest)
	if left <= 0 {
		r.Freed += fi.Size()
	} else {
		r.Kept += fi.Size()
	}
	return nil
}

// removeLinksIn removes the files of dir that are hard links of the file fi describes, and
// returns how many it removed.
func (s *Store) removeLinksIn(dir string, fi os.FileInfo) uint64 {
	if links(fi) < 2 {
		return 0
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n uint64
	for _, d := range ents {
		p := filepath.Join(dir, d.Name())
		if o, err := os.Lstat(p); err == nil && os.SameFile(o, fi) && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

// RemoveTemp deletes what interrupted transfers left in the work area (partial downloads
// kept for resuming, files of installs that were cut off), skipping anything a running
// transfer holds. It returns the bytes freed: a file that is also a link elsewhere (a blob, an
// imported original) frees nothing.
func (s *Store) RemoveTemp() (int64, error) {
	ents, err := os.ReadDir(s.TempDir())
	if err != nil {
		return 0, err
	}
	var freed int64
	for _, d := range ents {
		name := d.Name()
		if strings.HasSuffix(name, ".lock") {
			continue
		}
		key, _, isPart := strings.Cut(name, ".part")
		if isPart {
			release, ok := fileutil.TryLock(filepath.Join(s.TempDir(), key+".lock"))
			if !ok {
				continue // a transfer is writing it
			}
			freed += removeCounting(filepath.Join(s.TempDir(), name))
			release()
			continue
		}
		// Another process's install in progress keeps its file's modification time
		// fresh; leave recent files alone.
		if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > staleTemp {
			freed += removeCounting(filepath.Join(s.TempDir(), name))
		}
	}
	return freed, nil
}

func removeCounting(p string) int64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	if os.Remove(p) != nil || links(fi) > 1 {
		return 0
	}
	return fi.Size()
}
