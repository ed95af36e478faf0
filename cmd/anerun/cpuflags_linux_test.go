package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/affinity"
)

// TestCPUsFlag runs the binary with --cpus: doctor reports the process on that CPU alone, and
// bench, given no --threads, runs one thread per CPU of the list and reports the list. A CPU the process may not run
// on and a malformed list are refused, naming the flag.
func TestCPUsFlag(t *testing.T) {
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	last := strconv.Itoa(allowed[len(allowed)-1])
	r := anerun(t, "", "doctor", "--json", "--cpus", last)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
		t.Fatalf("doctor --cpus %s: exit %d, %v: %s", last, r.code, err, r.stderr)
	}
	if rep.CPUList != last {
		t.Errorf("doctor --cpus %s: the process runs on %q", last, rep.CPUList)
	}
	if r := anerun(t, "", "doctor", "--json"); !strings.Contains(r.stdout, `"cpu_list": "`+affinity.Format(allowed)+`"`) {
		t.Errorf("doctor without --cpus: %s", r.stdout)
	}

	r = anerun(t, "", "bench", bundle(t), "--prompt-tokens", "8", "--gen-tokens", "4", "--repetitions", "1", "--json", "--cpus", last)
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || res.Threads != 1 || res.CPUList != last {
		t.Errorf("bench --cpus %s: exit %d, %v, threads %d on CPUs %q: %s", last, r.code, err, res.Threads, res.CPUList, r.stderr)
	}

	for _, c := range []struct{ list, want string }{
		{strconv.Itoa(allowed[len(allowed)-1] + 1), "is not one this process may run on (" + affinity.Format(allowed) + ")"},
		{"0-", "expected a list like 0-3,8"},
	} {
		if r := anerun(t, "", "doctor", "--cpus", c.list); r.code == 0 || !strings.Contains(r.stderr, "--cpus: ") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("--cpus %s: exit %d, %q", c.list, r.code, r.stderr)
		}
	}
}
