package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
)

// Entry is what the store knows about one reference: the bundle it names and a summary for
// listings.
type Entry struct {
	// Reference is the canonical reference the bundle was pulled as (empty for a blob that
	// no reference names).
	Reference string    `json:"reference"`
	Digest    string    `json:"digest"` // sha256 of the whole bundle
	Size      int64     `json:"size"`
	Model     Model     `json:"model"`
	PulledAt  time.Time `json:"pulled_at"`
	// Transfer says how it arrived, e.g. "oci zstd-frames 0.66" or "https"; informational.
	Transfer string `json:"transfer,omitempty"`
	// Source says where a bundle that was not pulled came from, for listings: "packed
	// Org/Name@<commit>" for a model packed from the Hugging Face Hub, "packed <dir>" for a
	// local checkpoint, "imported <file>" for a bundle file added to the store. Empty for a
	// pulled bundle, whose Reference says where it came from.
	Source string `json:"source,omitempty"`
	// Missing is set by List when the blob is no longer present (it was found corrupt
	// and deleted); the next use pulls it again.
	Missing bool `json:"-"`
}

// Model is the bundle manifest's model summary.
type Model struct {
	Name         string `json:"name,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	DType        string `json:"dtype,omitempty"`
	Parameters   int64  `json:"parameters,omitempty"`
}

// maxRefName keeps ref file names under the 255-byte limit of common file systems.
const maxRefName = 200

// refFileName escapes a reference into one file name: [A-Za-z0-9._-] stay, every other byte
// becomes %XX; a name that would be too long is cut and made unique by a hash of the
// reference.
func refFileName(ref string) string {
	var b strings.Builder
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || (c == '.' && i > 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := b.String()
	if len(name) > maxRefName {
		sum := sha256.Sum256([]byte(ref))
		name = name[:maxRefName-34] + "~" + hex.EncodeToString(sum[:16])
	}
	return name
}

func (s *Store) refPath(ref string) string { return filepath.Join(s.refDir(), refFileName(ref)) }

func checkRef(ref string) error {
	if ref == "" {
		return errors.New("store: empty reference")
	}
	if strings.ContainsAny(ref, "\x00\n") {
		return fmt.Errorf("store: invalid reference %q", ref)
	}
	return nil
}

// Lookup returns the entry for a reference; the error wraps ErrNotFound when there is none.
// The blob is not checked (see Get).
func (s *Store) Lookup(ref string) (Entry, error) {
	if err := checkRef(ref); err != nil {
		return Entry{}, err
	}
	e, err := readEntry(s.refPath(ref))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, fmt.Errorf("store: %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return Entry{}, err
	}
	if e.Reference != ref {
		// Two references whose long names were cut to the same prefix and hash cannot
		// happen short of a sha256 collision; a hand-edited file can.
		return Entry{}, fmt.Errorf("store: %s names %q, not %q: %w", s.refPath(ref), e.Reference, ref, ErrNotFound)
	}
	return e, nil
}

func readEntry(path string) (Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, fmt.Errorf("store: %s: invalid reference file: %v", path, err)
	}
	if _, err := ParseDigest(e.Digest); err != nil {
		return Entry{}, fmt.Errorf("store: %s: field digest: %v", path, err)
	}
	return e, nil
}

// SetRef records that ref names the bundle e.Digest (which must be in the store).
func (s *Store) SetRef(ctx context.Context, e Entry) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if !s.Has(e.Digest) {
		return fmt.Errorf("store: cannot name %s as %s: %w", e.Digest, e.Reference, ErrNotFound)
	}
	return s.writeRef(e)
}

// writeRef writes the ref file by write-fsync-rename; the caller holds the store lock. When
// the reference named another bundle before (a tag that moved) and nothing else names that
// one, it is deleted, so updating a reference does not leave the old bundle behind.
func (s *Store) writeRef(e Entry) error {
	if err := checkRef(e.Reference); err != nil {
		return err
	}
	old, err := s.Lookup(e.Reference)
	if err := s.writeRefFile(e); err != nil {
		return err
	}
	if err != nil || old.Digest == e.Digest {
		return nil
	}
	entries, err := s.List()
	if err != nil {
		return nil
	}
	for _, o := range entries {
		if o.Digest == old.Digest && o.Reference != "" {
			return nil
		}
	}
	var r Removed
	if err := s.removeBlob(old.Digest, &r); err == nil && len(r.Blobs) > 0 {
		s.logf("%s now names %s; deleted %s, which nothing else names (%d bytes freed, %d kept by another link)", e.Reference, e.Digest, old.Digest, r.Freed, r.Kept)
	}
	return nil
}

func (s *Store) writeRefFile(e Entry) error {
	if _, err := ParseDigest(e.Digest); err != nil {
		return err
	}
	if e.PulledAt.IsZero() {
		e.PulledAt = time.Now().UTC()
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	// The temporary file goes to tmp/, where RemoveTemp sweeps what an interrupted write left,
	// rather than into refs/, where List would read it as a reference.
	path := s.refPath(e.Reference)
	if err := fileutil.WriteFileAtomic(path, s.TempDir(), append(data, '\n')); err != nil {
		return diskErr(fmt.Errorf("store: writing %s: %w", path, err), s.dir)
	}
	return nil
}

// List returns every reference (sorted), then every blob that no reference names (with an
// empty Reference). A reference whose blob is gone has Missing set.
func (s *Store) List() ([]Entry, error) {
	names, err := readDirIfAny(s.refDir())
	if err != nil {
		return nil, err
	}
	var out []Entry
	named := map[string]bool{}
	for _, d := range names {
		if !d.Type().IsRegular() {
			continue
		}
		e, err := readEntry(filepath.Join(s.refDir(), d.Name()))
		if err != nil {
			s.logf("skipping %v", err)
			continue
		}
		e.Missing = !s.Has(e.Digest)
		named[e.Digest] = true
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reference < out[j].Reference })
	blobs, err := readDirIfAny(s.blobDir())
	if err != nil {
		return nil, err
	}
	for _, d := range blobs {
		dg := "sha256:" + d.Name()
		if !IsDigest(dg) || named[dg] {
			continue
		}
		fi, err := d.Info()
		if err != nil {
			continue
		}
		out = append(out, Entry{Digest: dg, Size: fi.Size(), PulledAt: fi.ModTime().UTC()})
	}
	return out, nil
}

// readDirIfAny lists dir; a directory that does not exist (a store opened read-only before
// anything was pulled) lists as empty, while one that cannot be read is an error naming it.
func readDirIfAny(dir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: cannot read %s: %w", dir, unwrapPath(err))
	}
	return ents, nil
}

// unwrapPath drops the *PathError's own "open <path>:" so that messages name the path once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (s *Store) lock(ctx context.Context) (func(), error) {
	unlock, err := fileutil.Lock(ctx, s.lockPath(), func() { s.logf("waiting for another process using %s", s.dir) })
	if err != nil {
		return nil, diskErr(fmt.Errorf("store: locking %s: %w", s.lockPath(), err), s.dir)
	}
	return unlock, nil
}
