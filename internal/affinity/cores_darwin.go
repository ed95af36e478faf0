package affinity

import "golang.org/x/sys/unix"

// cores is the number of performance cores (hw.perflevel0.physicalcpu, macOS 12 and later on
// Apple silicon), else of physical cores (hw.physicalcpu): Macs have no SMT, but Apple silicon's
// efficiency cores run the kernels at a fraction of a performance core's speed.
func cores() int {
	for _, name := range []string{"hw.perflevel0.physicalcpu", "hw.physicalcpu"} {
		if n, err := unix.SysctlUint32(name); err == nil && n > 0 {
			return int(n)
		}
	}
	return 0
}
