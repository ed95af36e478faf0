package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/anepack/anepack/internal/fileutil"
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

// HashFile returns the sha256 digest ("sha256:<hex>") and size of the file at path,
// reporting progress (bytes hashed, file size) as it goes; progress may be nil. It stops
// when ctx is done.
func HashFile(ctx context.Context, path string, progress func(done, total int64)) (string, int64, error) {
	sum, size, err := fileutil.SHA256File(ctx, path, progress)
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + sum, size, nil
}
