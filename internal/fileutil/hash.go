package fileutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/anepack/anepack/internal/regfile"
)

// hashBufSize is the read size for hashing files: large enough that syscalls cost nothing
// next to sha256.
const hashBufSize = 4 << 20

// SHA256File returns the hex sha256 and the size of the regular file at path, reporting
// progress (bytes hashed, file size) as it goes; progress may be nil. It never blocks on a
// named pipe (regfile) and stops when ctx is done.
func SHA256File(ctx context.Context, path string, progress func(done, total int64)) (string, int64, error) {
	f, err := regfile.Open(path)
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
	return hex.EncodeToString(h.Sum(nil)), done, nil
}
