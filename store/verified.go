package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Verification stamps. Hashing a bundle costs about a second per gigabyte, and `anerun REF`
// would pay it on every run. So once a blob has been hashed in full by Verify, the store records the file's identity — size, modification time and inode — in
// verified/<hex>. Verify skips the hash while the blob still has that identity: any write to
// the file changes its modification time, and a replaced file has another inode. What a stamp
// cannot see is corruption below the file system (bit rot); `anepack verify` hashes everything,
// and format.Open checks the bundle's header, table and manifest digests on every open anyway.

func (s *Store) stampPath(digest string) string {
	return filepath.Join(s.dir, "verified", strings.TrimPrefix(digest, "sha256:"))
}

// identity renders what the stamp compares: size, modification time and inode of path.
func identity(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("size=%d mtime=%d inode=%d\n", fi.Size(), fi.ModTime().UnixNano(), inode(fi)), nil
}

// racyWindow is how old a file's modification time must be before a stamp may vouch for it.
// File systems keep modification times with a clock that ticks every few milliseconds, so a
// write in the same tick as the stamp would leave the time unchanged (git's "racy clean"
// problem); a younger file is simply hashed again next time.
const racyWindow = 2 * time.Second

// stamp records that the blob at path was hashed to digest. Failing to write it only costs a
// re-hash next time, so errors are ignored.
func (s *Store) stamp(digest, path string) {
	fi, err := os.Stat(path)
	if err != nil || time.Since(fi.ModTime()) < racyWindow {
		return
	}
	id, err := identity(path)
	if err != nil {
		return
	}
	p := s.stampPath(digest)
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
		return
	}
	tmp := p + ".tmp"
	if os.WriteFile(tmp, []byte(id), 0o644) == nil {
		os.Rename(tmp, p)
	}
}

// stamped reports whether the blob at path still has the identity recorded when it was hashed.
func (s *Store) stamped(digest, path string) bool {
	want, err := os.ReadFile(s.stampPath(digest))
	if err != nil {
		return false
	}
	got, err := identity(path)
	return err == nil && got == string(want)
}

// unstamp forgets a blob's stamp (when the blob is deleted).
func (s *Store) unstamp(digest string) { os.Remove(s.stampPath(digest)) }
