package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/anepack/anepack/internal/regfile"
)

// ParseDigest checks a digest of the form "sha256:<64 lowercase hex digits>" and returns the
// hex part.
func ParseDigest(d string) (string, error) {
	algo, h, ok := strings.Cut(d, ":")
	if !ok {
		return "", fmt.Errorf("invalid digest %q: expected sha256:<64 hex digits>", d)
	}
	if algo != "sha256" {
		return "", fmt.Errorf("invalid digest %q: algorithm %q is not supported, expected sha256", d, algo)
	}
	if len(h) != 64 || !isLowerHex(h) {
		return "", fmt.Errorf("invalid digest %q: expected 64 lowercase hex digits after sha256:", d)
	}
	return h, nil
}

// IsDigest reports whether s is a valid sha256 digest.
func IsDigest(s string) bool { _, err := ParseDigest(s); return err == nil }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// hashBufSize is the read size for hashing files: large enough that syscalls cost nothing
// next to sha256.
const hashBufSize = 4 << 20

// HashFile returns the sha256 digest ("sha256:<hex>") and size of the file at path,
// reporting progress (bytes hashed, file size) as it goes; progress may be nil. It stops
// when ctx is done.
func HashFile(ctx context.Context, path string, progress func(done, total int64)) (string, int64, error) {
	f, err := regfile.Open(path) // a named pipe would block here, a device never end
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	total := fi.Size()
	h := sha256.New()
	buf := make([]byte, hashBufSize)
	var done int64
	for {
		if err := ctx.Err(); err != nil {
			return "", 0, err
		}
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			done += int64(n)
			if progress != nil {
				progress(done, total)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), done, nil
}
