package fileutil

import (
	"context"
	"io"
	"os"

	"github.com/anepack/anepack/internal/regfile"
)

// copyChunk bounds how much CopyFile copies between two looks at the context.
const copyChunk = 1 << 20

// CopyFile copies the regular file src to dst, which must not exist, and fsyncs it. It never
// blocks on a named pipe (src is opened through regfile) and stops when ctx is done. On failure
// dst is removed.
func CopyFile(ctx context.Context, src, dst string) (err error) {
	in, err := regfile.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := io.CopyN(out, in, copyChunk)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return out.Sync()
}
