package affinity

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Allowed returns the CPUs this process may run on now (sched_getaffinity), sorted.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading the CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// pin sets the mask of every thread in /proc/self/task, scanning again until a scan finds no
// thread it has not set: a thread started by one not yet set may appear after the scan that
// set its creator, but never after a scan that found every thread set.
func pin(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		found := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it has exited
				return fmt.Errorf("pinning thread %d to CPUs %s: %w", tid, Format(cpus), err)
			}
			done[tid], found = true, true
		}
		if !found {
			return nil
		}
	}
}
