//go:build unix

package fileutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f read-only and shared. The mapping stays valid after f is
// closed; Unmap releases it. A size of 0 maps nothing (nil).
func Map(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

// Unmap releases a mapping made by Map.
func Unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

// DropPages tells the kernel the process is done with b (a page-aligned part of a mapping), so
// its pages leave the resident set; they stay in the page cache for the next reader.
func DropPages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
