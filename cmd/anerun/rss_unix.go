//go:build linux || darwin

package main

import (
	goruntime "runtime"
	"syscall"
)

// peakRSS returns the process's peak resident set size in bytes (getrusage's ru_maxrss, which
// Linux reports in KiB and macOS in bytes). Pages of the mapped bundle that were read count.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if goruntime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
