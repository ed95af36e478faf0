//go:build unix

package store

import (
	"os"
	"syscall"
)

// inode returns the file's inode number, part of a verification stamp.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// links returns the file's hard-link count: the bytes of a file with more than one link stay on
// disk when one of them is removed.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
