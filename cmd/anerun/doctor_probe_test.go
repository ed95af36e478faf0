package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/backend"
)

// TestDoctorProbeBinary: `anerun doctor --probe` through the real binary. Off Apple Silicon it
// says the ANE is unavailable and shows the simulator's results of the same programs, every
// one of them correct, as a table and as JSON; --json prints only the JSON.
func TestDoctorProbeBinary(t *testing.T) {
	if onApple() {
		t.Skip("on Apple Silicon the probe runs on the ANE; this test checks the simulator's report")
	}
	t.Setenv("ANEPACK_HOME", t.TempDir())
	r := anerun(t, "", "doctor", "--probe")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "ane: unavailable (not an Apple Silicon Mac") || !strings.Contains(r.stdout, "simulator's results") {
		t.Errorf("does not say the ANE is unavailable:\n%s", r.stdout)
	}
	table, js, ok := strings.Cut(r.stdout, "The report as JSON (paste it into an issue):\n")
	if !ok {
		t.Fatalf("no JSON report:\n%s", r.stdout)
	}
	var rep probeReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, js)
	}
	if rep.Evaluator != "sim" || rep.ANE.Available || len(rep.Passes) != 1 || len(rep.Passes[0].Results) != len(ane.ProbePrograms()) {
		t.Fatalf("report %+v", rep)
	}
	for _, res := range rep.Passes[0].Results {
		if !res.OK {
			t.Errorf("%s failed in the simulator: %s", res.Name, res.Error)
		}
		if !strings.Contains(table, res.Name+" ") {
			t.Errorf("the table lacks %s", res.Name)
		}
	}
	if !strings.Contains(r.stderr, "probe: pass 1: rows-50688 ...") {
		t.Errorf("no progress line before a program runs:\n%s", r.stderr)
	}
	r = anerun(t, "", "doctor", "--probe", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		t.Errorf("--probe --json: exit %d, stdout not JSON:\n%s", r.code, r.stdout)
	}
}

// TestDoctorClearCache: --clear-cache removes the staging directories (marked as anepack's)
// from the temporary directory, and the self-test records, and nothing else.
func TestDoctorClearCache(t *testing.T) {
	if onApple() {
		t.Skip("on Apple Silicon the staging root is the framework's temporary directory")
	}
	tmp, home := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("ANEPACK_HOME", home)
	for _, d := range []string{"ABC123", "DEF456"} {
		os.MkdirAll(filepath.Join(tmp, d, "weights"), 0o755)
		os.WriteFile(filepath.Join(tmp, d, ".anepack-staging"), []byte("x"), 0o644)
		os.WriteFile(filepath.Join(tmp, d, "weights", "w.bin"), make([]byte, 1000), 0o644)
	}
	os.MkdirAll(filepath.Join(tmp, "someone-elses"), 0o755)
	if err := ane.DefaultSelfTestCache(home).Store(ane.SelfTestRecord{OSBuild: "24D70", Passed: true}); err != nil {
		t.Fatal(err)
	}
	r := anerun(t, "", "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.ANE.CompileCache.Programs != 2 || rep.ANE.CompileCache.Dir != tmp {
		t.Errorf("doctor before: %+v (%v)", rep.ANE.CompileCache, err)
	}
	r = anerun(t, "", "doctor", "--clear-cache")
	if r.code != 0 || !strings.Contains(r.stdout, "removed 2 compiled programs") || !strings.Contains(r.stdout, filepath.Join(home, ane.SelfTestFile)) {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 || entries[0].Name() != "someone-elses" {
		t.Errorf("left %v", entries)
	}
	if _, err := os.Stat(filepath.Join(home, ane.SelfTestFile)); !os.IsNotExist(err) {
		t.Errorf("self-test record: %v", err)
	}
}

// TestSelfTestChild runs the self-test the way --backend auto does, in a child process of the
// real binary (`anerun doctor --self-test`): off Apple Silicon a failed record saying why.
// runtime/backend's TestChildSelfTest covers children that crash or print something else.
func TestSelfTestChild(t *testing.T) {
	if onApple() {
		t.Skip("on Apple Silicon the self-test compiles on the ANE; doctor --probe's report covers it there")
	}
	rec := backend.ChildSelfTest(anerunBin, "doctor", "--self-test")()
	if rec.Passed || !strings.Contains(rec.Reason, "not an Apple Silicon Mac") {
		t.Errorf("real binary: %+v", rec)
	}
}
