//go:build !unix

package fileutil

import (
	"io"
	"os"
)

// Map reads the first size bytes of f into memory where mmap is not available.
func Map(f *os.File, size int64) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

// Unmap does nothing: the bytes Map read are garbage-collected.
func Unmap([]byte) error { return nil }

// DropPages does nothing without mmap.
func DropPages([]byte) {}
