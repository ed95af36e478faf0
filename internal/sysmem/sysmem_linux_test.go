package sysmem

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRlimitAS lowers the process's own RLIMIT_AS to 1 GiB above its virtual size, as
// `ulimit -v` does, and expects Available to report about that 1 GiB, naming the limit.
func TestRlimitAS(t *testing.T) {
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	vm, ok := procField("/proc/self/status", "VmSize:")
	if !ok {
		t.Fatal("no VmSize in /proc/self/status")
	}
	lim := uint64(vm<<10 + 1<<30)
	if old.Cur != unix.RLIM_INFINITY && old.Cur < lim {
		t.Fatalf("RLIMIT_AS is already %d", old.Cur)
	}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	l, ok := Available()
	if err := unix.Setrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	if !ok || !strings.Contains(l.Source, "RLIMIT_AS") || l.Bytes > 1<<30 || l.Bytes < 1<<29 {
		t.Fatalf("with RLIMIT_AS 1 GiB above the virtual size: Available() = %+v, %v", l, ok)
	}
}

// TestMemAvailable compares with /proc/meminfo's MemTotal: what is available is less.
func TestMemAvailable(t *testing.T) {
	l, ok := Available()
	total, okT := procField("/proc/meminfo", "MemTotal:")
	if !ok || !okT || l.Bytes > total<<10 {
		t.Fatalf("Available() = %+v, %v; MemTotal %d kB", l, ok, total)
	}
}
