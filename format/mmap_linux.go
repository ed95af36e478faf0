package format

import "golang.org/x/sys/unix"

// adviseMapping asks for transparent huge pages on the mapping (MADV_HUGEPAGE). For a file
// mapping this makes the kernel read pages it does not have cached as 2 MiB folios (on
// filesystems with large folios, such as ext4 and XFS on Linux 6.x) and map them with one PMD
// entry each: a weight matrix then crosses a few hundred TLB entries instead of a few hundred
// thousand, and the hardware prefetchers no longer stop at every 4 KiB page. Measured on the
// full-size Qwen2.5-0.5B bundle (BENCHMARKS.md): the bundle anepack had just written sat in
// the page cache as small folios and was never PMD-mapped, while the GGUF llama.cpp was
// compared with (written in multi-MiB chunks) was 60% PMD-mapped. The advice is only a hint:
// an error (no THP support, THP disabled) changes nothing and is ignored.
func adviseMapping(data []byte) {
	_ = unix.Madvise(data, unix.MADV_HUGEPAGE)
}
