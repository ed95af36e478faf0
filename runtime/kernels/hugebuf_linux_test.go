package kernels

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeBytes returns n zeroed bytes of anonymous memory backed by transparent huge pages where
// the kernel grants them (MADV_HUGEPAGE before the first touch), as the decode path reads a
// bundle mapped in 2 MiB pages (format.Bundle.PlaceHuge). The Go heap uses 4 KiB pages, and
// in a VM every 4 KiB TLB miss of a 1 GB stream walks two page tables: the benchmarks would
// measure the page walks, not the kernels. Falls back to the heap if mmap fails.
func hugeBytes(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n)
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b
}

func hugeFloats(n int) []float32 {
	b := hugeBytes(4 * n)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func hugeUint16s(n int) []uint16 {
	b := hugeBytes(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
