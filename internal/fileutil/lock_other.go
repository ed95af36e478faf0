//go:build !unix

package fileutil

import "context"

// Lock is a no-op where flock is not available; it only honours ctx. Writes stay safe through
// write-then-rename; two processes may then download the same file at once.
func Lock(ctx context.Context, path string, onWait func()) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// TryLock always succeeds where flock is not available.
func TryLock(string) (func(), bool) { return func() {}, true }

// FreeSpace is unknown here; writes still fail cleanly when the disk fills.
func FreeSpace(string) (int64, bool) { return 0, false }
