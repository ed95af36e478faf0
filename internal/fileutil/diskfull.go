package fileutil

import (
	"errors"
	"syscall"
)

// IsDiskFull reports whether err is (or wraps) ENOSPC or EDQUOT: the disk, or this user's
// quota on it, is full. Callers turn it into a message that says where and what to do.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
