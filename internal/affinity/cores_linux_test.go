package affinity

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// writeSysfs builds a sysfs tree under a temporary directory: for each CPU the list of CPUs
// sharing its core, in file (core_cpus_list or thread_siblings_list; "" writes none), and
// devices/cpu_core/cpus when perf is not empty.
func writeSysfs(t *testing.T, file string, cores map[int]string, perf string) string {
	t.Helper()
	sys := t.TempDir()
	for cpu, core := range cores {
		dir := filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "topology")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(core+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if perf != "" {
		dir := filepath.Join(sys, "devices/cpu_core")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cpus"), []byte(perf+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

func TestCoresIn(t *testing.T) {
	// 4 cores with 2 SMT threads each, numbered as Linux does on x86: CPU c and c+4 share a core.
	smt := map[int]string{0: "0,4", 1: "1,5", 2: "2,6", 3: "3,7", 4: "0,4", 5: "1,5", 6: "2,6", 7: "3,7"}
	// A hybrid CPU: 2 performance cores with SMT (CPUs 0-3), 4 efficiency cores (4-7).
	hybrid := map[int]string{0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3", 4: "4", 5: "5", 6: "6", 7: "7"}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		name    string
		sys     string
		allowed []int
		want    int
	}{
		{"SMT, every CPU", writeSysfs(t, "core_cpus_list", smt, ""), all, 4},
		{"SMT, two siblings", writeSysfs(t, "core_cpus_list", smt, ""), []int{0, 4}, 1},
		{"SMT, two cores", writeSysfs(t, "core_cpus_list", smt, ""), []int{0, 1}, 2},
		{"SMT, a kernel before 5.7", writeSysfs(t, "thread_siblings_list", smt, ""), all, 4},
		{"no topology: a core per CPU", writeSysfs(t, "", smt, ""), all, 8},
		{"hybrid: performance cores only", writeSysfs(t, "core_cpus_list", hybrid, "0-3"), all, 2},
		{"hybrid, on efficiency cores only", writeSysfs(t, "core_cpus_list", hybrid, "0-3"), []int{4, 5, 6}, 3},
		{"hybrid, one performance core allowed", writeSysfs(t, "core_cpus_list", hybrid, "0-3"), []int{1, 5, 6}, 1},
	} {
		if got := coresIn(tc.sys, tc.allowed); got != tc.want {
			t.Errorf("%s: coresIn = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCores: this machine's count is between one and the CPUs the process may run on.
func TestCores(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if n := Cores(); n < 1 || n > len(allowed) {
		t.Errorf("Cores() = %d with %d CPUs allowed (%s)", n, len(allowed), Format(allowed))
	}
}
