//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package hub

import "context"

// freeSpace is unknown here; the download still fails cleanly on ENOSPC.
func freeSpace(string) (int64, bool) { return 0, false }

func isQuotaErr(error) bool { return false }

// lockFile is a no-op where flock is not available.
func lockFile(context.Context, string, func()) (func(), error) { return func() {}, nil }
