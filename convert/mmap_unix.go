//go:build unix

package convert

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps f read-only. The mapping stays valid after f is closed.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

// dropPages tells the kernel we are done with b (a page-aligned part of a mapping), so the
// pages leave this process's resident set; they stay in the page cache.
func dropPages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
