// Package affinity pins this process's threads to a set of CPUs, as taskset does from outside,
// and parses and writes CPU lists in the form taskset and /proc use ("0-3,8").
//
// Why: on a shared 2-vCPU VM, a one-thread anerun that the scheduler was free to move decoded
// about a fifth slower than the same run held on one CPU (docs/performance.md, "Measuring well"). Go cannot
// pin a goroutine, so the whole process is pinned: every thread it has, and through them every
// thread it will start, which inherits its creator's mask.
package affinity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Parse reads a CPU list: comma-separated CPU numbers and inclusive ranges, "0-3,8". It returns
// the CPUs sorted, each once.
func Parse(list string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(lo)
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(hi)
		}
		if errA != nil || errB != nil || a < 0 || b < a || b-a > maxCPU {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or a range lo-hi (expected a list like 0-3,8)", list, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// maxCPU bounds a range, so that a typo such as 0-99999999 is an error, not a huge list.
const maxCPU = 1 << 16

// Format writes CPUs (sorted, each once) as a CPU list, with runs as ranges: "0-3,8".
func Format(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Pin holds every thread of this process, and so every thread it starts later, to cpus, which
// must all be CPUs the process may run on (Allowed). It does not change GOMAXPROCS; a caller
// that wants one P per CPU, as the Go runtime picks at start under taskset, sets it.
func Pin(cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("no CPUs to pin to")
	}
	allowed, err := Allowed()
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(allowed, c) {
			return fmt.Errorf("CPU %d is not one this process may run on (%s)", c, Format(allowed))
		}
	}
	return pin(cpus)
}
