//go:build !unix

package store

import "os"

// inode is 0 where the platform has no inode numbers; size and modification time remain.
func inode(os.FileInfo) uint64 { return 0 }

// links is 1 where the platform does not count hard links: removing the file frees it.
func links(os.FileInfo) uint64 { return 1 }
