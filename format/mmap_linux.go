package format

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PlaceHuge makes the whole mapping resident, in 2 MiB pages where the kernel can. It asks for
// transparent huge pages (MADV_HUGEPAGE) and reads every page in (MADV_POPULATE_READ); if less
// than 90% of the mapping then sits in 2 MiB page mappings, because the page cache holds the
// file in small folios (as it does right after the file was written in chunks smaller than
// 2 MiB, or copied with a small buffer, or when some of it was evicted and read back by a
// process that did not ask for huge pages), it drops the mapping's pages, evicts them from the page cache (pages another process maps stay) and reads
// them again, which under MADV_HUGEPAGE the kernel does in 2 MiB folios. That costs one read
// of the file from disk, once: later runs find the large folios in the page cache. It reports
// the bytes mapped with 2 MiB entries before and after.
//
// Open does not ask for huge pages itself: they help decode only when the page cache holds the
// bundle in 2 MiB folios, which it does not right after the bundle was written (anepack, a
// pull), the usual case; there MADV_HUGEPAGE on the mapping measured 3-10% slower decode
// (Sapphire Rapids at 2 and 16 threads, AMD EPYC at 2; docs/performance.md, "Decisions backed
// by measurement").
func (b *Bundle) PlaceHuge() (before, after int64, err error) {
	if b.data == nil {
		return 0, 0, fmt.Errorf("format: %s is not memory-mapped", b.name)
	}
	// Ask for transparent huge pages first: a file mapping is read in 2 MiB folios only under
	// MADV_HUGEPAGE (an error, no THP support, only means small pages).
	_ = unix.Madvise(b.data, unix.MADV_HUGEPAGE)
	if err := unix.Madvise(b.data, unix.MADV_POPULATE_READ); err != nil {
		return 0, 0, fmt.Errorf("format: populate %s: %w", b.name, err)
	}
	if before, err = b.pmdMapped(); err != nil || 10*before >= 9*int64(len(b.data)) {
		return before, before, err
	}
	f, err := os.Open(b.name)
	if err != nil {
		return before, before, err
	}
	defer f.Close()
	if err := unix.Madvise(b.data, unix.MADV_DONTNEED); err != nil {
		return before, before, fmt.Errorf("format: drop the pages of %s: %w", b.name, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, int64(len(b.data)), unix.FADV_DONTNEED); err != nil {
		return before, before, fmt.Errorf("format: evict %s from the page cache: %w", b.name, err)
	}
	if err := unix.Madvise(b.data, unix.MADV_POPULATE_READ); err != nil {
		return before, before, fmt.Errorf("format: populate %s: %w", b.name, err)
	}
	after, err = b.pmdMapped()
	return before, after, err
}

// pmdMapped returns the bytes of the mapping that /proc/self/smaps counts as FilePmdMapped.
func (b *Bundle) pmdMapped() (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.data))))
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Bytes()
		// A mapping's header line starts with its range, "lo-hi perms ..."; its fields follow
		// as "Name:   value kB".
		if i := bytes.IndexByte(line, '-'); i > 0 && bytes.IndexByte(line[:i], ':') < 0 && bytes.IndexByte(line[:i], ' ') < 0 {
			lo, err := strconv.ParseUint(string(line[:i]), 16, 64)
			in = err == nil && lo == start
			continue
		}
		if in && bytes.HasPrefix(line, []byte("FilePmdMapped:")) {
			fields := bytes.Fields(line)
			kb, err := strconv.ParseInt(string(fields[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("smaps: no mapping at %#x", start)
}
