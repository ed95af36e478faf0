package affinity

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cores counts the physical cores among the CPUs this process may run on, from sysfs.
func cores() int {
	allowed, err := Allowed()
	if err != nil {
		return 0
	}
	return coresIn("/sys", allowed)
}

// coresIn counts the distinct cores of the allowed CPUs as the sysfs tree under sys describes
// them: a CPU's core is the list of CPUs that share it (topology/core_cpus_list, or
// thread_siblings_list on kernels before 5.7); a CPU whose topology is missing counts as a core
// of its own. On a hybrid Intel CPU, where devices/cpu_core/cpus lists the performance cores,
// only those count, unless the process may run on none of them.
func coresIn(sys string, allowed []int) int {
	if perf, err := readCPUList(filepath.Join(sys, "devices/cpu_core/cpus")); err == nil {
		var onPerf []int
		for _, c := range allowed {
			if slices.Contains(perf, c) {
				onPerf = append(onPerf, c)
			}
		}
		if len(onPerf) > 0 {
			allowed = onPerf
		}
	}
	seen := map[string]bool{}
	for _, c := range allowed {
		dir := filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(c), "topology")
		core, err := readCPUList(filepath.Join(dir, "core_cpus_list"))
		if err != nil {
			core, err = readCPUList(filepath.Join(dir, "thread_siblings_list"))
		}
		key := strconv.Itoa(c)
		if err == nil && len(core) > 0 {
			key = Format(core)
		}
		seen[key] = true
	}
	return len(seen)
}

// readCPUList reads a sysfs file holding a CPU list ("0-3,8").
func readCPUList(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(strings.TrimSpace(string(b)))
}
