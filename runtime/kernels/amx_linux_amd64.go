//go:build !noasm

package kernels

import (
	"sync"
	"syscall"
)

// amxPermitted asks Linux, once per process, for the AMX tile state (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA): since Linux 5.16 a process must ask before its
// first tile instruction, which otherwise faults. It fails on older kernels and where the
// hypervisor or kernel keeps AMX off.
var amxPermitted = sync.OnceValue(func() bool {
	const archReqXcompPerm, xfeatureXtiledata = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXtiledata, 0)
	return errno == 0
})
