package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// available is the least of: MemAvailable, what each cgroup (v2, or v1) above the process
// leaves under its limit, and what RLIMIT_AS and RLIMIT_DATA leave above the process's
// virtual and data sizes.
func available() (Limit, bool) {
	var best Limit
	found := false
	consider := func(n int64, source string) {
		if !found || n < best.Bytes {
			best, found = Limit{Bytes: max(n, 0), Source: source}, true
		}
	}
	if kb, ok := procField("/proc/meminfo", "MemAvailable:"); ok {
		consider(kb<<10, "MemAvailable in /proc/meminfo")
	}
	if l, ok := cgroupLeft(); ok {
		consider(l.Bytes, l.Source)
	}
	for _, r := range []struct {
		res   int
		name  string
		field string
	}{{unix.RLIMIT_AS, "RLIMIT_AS (ulimit -v)", "VmSize:"}, {unix.RLIMIT_DATA, "RLIMIT_DATA (ulimit -d)", "VmData:"}} {
		var rl unix.Rlimit
		if unix.Getrlimit(r.res, &rl) != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > 1<<62 {
			continue
		}
		used, _ := procField("/proc/self/status", r.field)
		consider(int64(rl.Cur)-used<<10, r.name)
	}
	return best, found
}

// procField reads the kB value of a "Name:   1234 kB" line of a /proc file.
func procField(file, name string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			n, err := strconv.ParseInt(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// cgroupLeft returns the least memory any cgroup from the process's up to the root leaves under
// its limit: memory.max - memory.current (v2), or memory.limit_in_bytes - memory.usage_in_bytes
// (v1).
func cgroupLeft() (Limit, bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Limit{}, false
	}
	var best Limit
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// "0::/user.slice/..." (v2) or "4:memory:/docker/..." (v1)
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var roots []string
		var limitFile, usageFile string
		switch {
		case parts[0] == "0" && parts[1] == "":
			// v2 alone, or beside v1 ("hybrid"), where it is mounted at unified/.
			roots, limitFile, usageFile = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}, "memory.max", "memory.current"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			roots, limitFile, usageFile = []string{"/sys/fs/cgroup/memory"}, "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for _, root := range roots {
			for dir := path.Clean("/" + parts[2]); ; dir = path.Dir(dir) {
				limit, okL := readInt(path.Join(root, dir, limitFile))
				usage, okU := readInt(path.Join(root, dir, usageFile))
				// v2 writes no limit as "max"; v1 as a number near 2^63.
				if okL && okU && limit < 1<<62 && (!found || limit-usage < best.Bytes) {
					best, found = Limit{Bytes: max(limit-usage, 0), Source: "the memory limit of cgroup " + dir}, true
				}
				if dir == "/" {
					break
				}
			}
		}
	}
	return best, found
}

// readInt reads a file holding one integer ("max" is not one).
func readInt(file string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}
