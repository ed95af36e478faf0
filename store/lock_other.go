//go:build !unix

package store

import "context"

// lockFile is a no-op where flock is not available; see the package documentation.
func lockFile(ctx context.Context, path string, onWait func()) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func() {}, nil
}

func tryLockFile(string) (func(), bool) { return func() {}, true }

func freeSpace(string) (int64, bool) { return 0, false }
