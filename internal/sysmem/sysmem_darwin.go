package sysmem

import "golang.org/x/sys/unix"

// available is the machine's physical memory: macOS reports no figure like Linux's
// MemAvailable (it compresses and swaps instead), so a cache larger than the whole memory is
// what is refused.
func available() (Limit, bool) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n == 0 || n > 1<<62 {
		return Limit{}, false
	}
	return Limit{Bytes: int64(n), Source: "the machine's memory (hw.memsize)"}, true
}
