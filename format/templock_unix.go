//go:build linux || darwin

package format

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockTemp takes the lock a Writer holds on its temporary file for as long as the file is
// open, so that RemoveStaleTemps in another process leaves it alone. The lock goes with the
// descriptor: a process that dies, however it dies, releases it.
func lockTemp(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// removeIfUnlocked removes the file at p unless a live Writer holds its lock, and reports
// whether it did. The lock is held while removing, so a Writer cannot take the file meanwhile.
func removeIfUnlocked(p string) bool {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false // EWOULDBLOCK: a live Writer's file
	}
	return os.Remove(p) == nil
}
