package quant

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuLoop runs body b.N times (b.Loop) on one locked OS thread and also reports the thread's
// CPU time per op as cpu-ns/op: on a machine shared with other work, wall time per op
// measures the neighbours as much as the code, CPU time much less so.
func cpuLoop(b *testing.B, body func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	n := 0
	for b.Loop() {
		body()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(threadCPU()-start)/float64(n), "cpu-ns/op")
	}
}
