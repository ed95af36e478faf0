//go:build linux || darwin

package format

import (
	"bytes"
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/regfile"
)

// Open opens the bundle at path by mapping it read-only into memory, and checks its header,
// section table, manifest and root digest. Section bytes are not read until used: Bytes
// returns slices of the mapping without copying. Section digests are checked by
// VerifySection and Verify.
//
// If the file is truncated or rewritten in place while mapped, reading a section crashes the
// process (SIGBUS), except inside Verify, VerifySection and FileDigest, which report an
// error. Bundles are replaced by rename, never rewritten in place, so this does not happen
// in normal use.
func Open(path string) (*Bundle, error) {
	b, err := openMapped(path)
	if err != nil {
		return nil, fmt.Errorf("format: open %s: %w", path, err)
	}
	return b, nil
}

func openMapped(path string) (b *Bundle, err error) {
	// regfile refuses a named pipe or a device before it can block the open or stream forever.
	f, err := regfile.Open(path)
	if err != nil {
		return nil, unwrapOpen(err)
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < HeaderSize {
		return parse(f, size, true) // cannot succeed; reports wrong magic or truncation
	}
	if uint64(size) > uint64(maxInt) {
		return nil, fmt.Errorf("file is %d bytes, too large to map on this platform", size)
	}
	data, err := fileutil.Map(f, size)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	defer func() {
		if err != nil {
			fileutil.Unmap(data)
		}
	}()
	defer catchFault(&err, debug.SetPanicOnFault(true)) // the file may shrink between Stat and the reads
	b, err = parse(bytes.NewReader(data), size, true)
	if err != nil {
		return nil, err
	}
	b.data = data
	b.name = path
	b.closer = func() error { return fileutil.Unmap(data) }
	return b, nil
}

// Lock pins the whole mapping in memory (mlock): every page is read in now and stays resident,
// so page reclaim under memory pressure cannot make a later token fault the weights back in
// from disk. It needs RLIMIT_MEMLOCK (ulimit -l) at least as large as the bundle, or
// CAP_IPC_LOCK. The lock ends with Close.
func (b *Bundle) Lock() error {
	if b.data == nil {
		return fmt.Errorf("format: lock %s: the bundle is not memory-mapped", b.name)
	}
	if err := unix.Mlock(b.data); err != nil {
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil && uint64(len(b.data)) > lim.Cur {
			return fmt.Errorf("format: lock %s (%d MiB): %w; the memlock limit is %d KiB (raise it with ulimit -l, or limits.conf's memlock)", b.name, len(b.data)>>20, err, lim.Cur>>10)
		}
		return fmt.Errorf("format: lock %s: %w", b.name, err)
	}
	return nil
}
