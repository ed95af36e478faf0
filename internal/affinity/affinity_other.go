//go:build !linux

package affinity

import (
	"fmt"
	"runtime"
)

// Allowed returns the CPUs this process may run on. Without an affinity interface (macOS has
// none that binds a thread to a core) that is every CPU, 0 to runtime.NumCPU()-1.
func Allowed() ([]int, error) {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus, nil
}

func pin([]int) error {
	return fmt.Errorf("pinning threads to CPUs is not supported on %s (only on Linux)", runtime.GOOS)
}
