package ane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/mil"
)

// TestDecideAuto walks --backend auto through a machine's life: no ANE (no test run), the first
// run (the self-test runs and is remembered), the next runs (from the file), an OS update (a
// new build runs it again), a failed test (the CPU, saying why), a record of an older version,
// and a damaged file (run again and rewritten).
func TestDecideAuto(t *testing.T) {
	cache := DefaultSelfTestCache(filepath.Join(t.TempDir(), "store"))
	runs := 0
	pass := func() SelfTestRecord {
		runs++
		return SelfTestRecord{Passed: true, BlobLayout: mil.LayoutSplit, When: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	}
	fail := func() SelfTestRecord {
		runs++
		return SelfTestRecord{Reason: "self-test: wrong result: off by 1 of the output's magnitude"}
	}
	host := Report{Available: true, OSBuild: "24D70", Chip: "Apple M1"}

	if c := DecideAuto(Report{Reason: "not an Apple Silicon Mac"}, cache, pass); c.UseANE || runs != 0 || !strings.Contains(c.Reason, "not available: not an Apple Silicon Mac") {
		t.Errorf("without an ANE: %+v, %d runs", c, runs)
	}
	c := DecideAuto(host, cache, pass)
	if !c.UseANE || !c.Ran || c.Layout != mil.LayoutSplit || runs != 1 || !strings.Contains(c.Reason, "passed on this OS build (24D70, 2025-03-01)") {
		t.Errorf("first run: %+v, %d runs", c, runs)
	}
	c = DecideAuto(host, cache, pass)
	if !c.UseANE || c.Ran || c.Layout != mil.LayoutSplit || runs != 1 {
		t.Errorf("second run: %+v, %d runs; want the cached record", c, runs)
	}
	updated := host
	updated.OSBuild = "24E248"
	c = DecideAuto(updated, cache, fail)
	if c.UseANE || !c.Ran || runs != 2 || !strings.Contains(c.Reason, "failed on this OS build (24E248") || !strings.Contains(c.Reason, "off by 1") || !strings.Contains(c.Reason, "doctor --probe") {
		t.Errorf("after an OS update: %+v, %d runs", c, runs)
	}
	if c = DecideAuto(updated, cache, pass); c.UseANE || c.Ran || runs != 2 {
		t.Errorf("a failed test is remembered too: %+v", c)
	}
	if rec, ok, err := cache.Lookup("24D70", "Apple M1"); !ok || err != nil || !rec.Passed || rec.Version != selfTestVersion {
		t.Errorf("the first build's record: %+v %v %v", rec, ok, err)
	}
	if _, ok, _ := cache.Lookup("24D70", "Apple M2"); ok {
		t.Error("a record of another chip was used")
	}
	if rec, ok, _ := cache.LookupHost(host); !ok || !rec.Passed {
		t.Errorf("LookupHost: %+v %v", rec, ok)
	}
	if rec, ok, _ := cache.LookupHost(Report{OS: "macOS 15.3", Chip: "Apple M1"}); ok {
		t.Errorf("LookupHost without a build found %+v under the release", rec)
	}
	if c = DecideAuto(host, cache, nil); !c.UseANE || c.Ran {
		t.Errorf("no runner, a record: %+v", c)
	}
	m3 := Report{Available: true, OSBuild: "24D70", Chip: "Apple M3"}
	if c = DecideAuto(m3, cache, nil); c.UseANE || c.Ran || !strings.Contains(c.Reason, "has not run on this OS build (24D70)") {
		t.Errorf("no runner, no record: %+v", c)
	}
	if _, ok, _ := cache.LookupHost(m3); ok {
		t.Error("no runner: a record was stored")
	}

	doc, _ := cache.read()
	old := doc.Records["24D70"]
	old.Version = selfTestVersion - 1
	if err := cache.Store(old); err != nil {
		t.Fatal(err)
	}
	if c = DecideAuto(host, cache, pass); !c.Ran || runs != 3 {
		t.Errorf("a record of another version: %+v, %d runs", c, runs)
	}

	if err := os.WriteFile(cache.Path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cache.Lookup("24D70", "Apple M1"); err == nil {
		t.Error("a damaged file read without error")
	}
	if c = DecideAuto(host, cache, pass); !c.UseANE || !c.Ran || runs != 4 {
		t.Errorf("a damaged file: %+v, %d runs", c, runs)
	}
	if _, ok, err := cache.Lookup("24D70", "Apple M1"); !ok || err != nil {
		t.Errorf("the damaged file was not rewritten: %v %v", ok, err)
	}

	if err := cache.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := cache.Remove(); err != nil {
		t.Errorf("removing a missing file: %v", err)
	}
	if c = DecideAuto(host, cache, pass); !c.Ran {
		t.Error("after Remove the test did not run again")
	}

	blocked := SelfTestCache{Path: filepath.Join(cache.Path, "not-a-dir", SelfTestFile)}
	if c = DecideAuto(host, blocked, pass); !c.UseANE || !strings.Contains(c.Reason, "not remembered") {
		t.Errorf("an unwritable cache: %+v", c)
	}
}

// TestSelfTestOnDriver runs the self-test through the driver over the fake framework: it
// passes, finds the packed layout (compiling nothing in the split one), and a self-test whose
// identity comes back wrong fails with the probe's reason.
func TestSelfTestOnDriver(t *testing.T) {
	daemon := newFakeDaemon()
	d, _ := newFakeDriver(daemon, t.TempDir())
	rec := SelfTest(d)
	if !rec.Passed || rec.BlobLayout != mil.LayoutPacked || len(rec.Results) != 2 || rec.Version != selfTestVersion || rec.When.IsZero() {
		t.Errorf("self-test %+v", rec)
	}
	if c := d.Counts(); c.Compiles != 2 {
		t.Errorf("%d compiles; want 2", c.Compiles)
	}
	daemon.failLoad = func(string) error {
		return &NSError{Op: "loadWithQoS:options:error:", Code: 6, Description: "program load failure"}
	}
	d2, _ := newFakeDriver(daemon, t.TempDir())
	rec = SelfTest(d2)
	if rec.Passed || !strings.Contains(rec.Reason, "self-test: ") || !strings.Contains(rec.Reason, "program load failure") {
		t.Errorf("failing self-test %+v", rec)
	}
	pass := ProbePass{Results: rec.Results}
	if r := SelfTestFromProbe(pass); r.Passed || !strings.Contains(r.Reason, "program load failure") {
		t.Errorf("SelfTestFromProbe of a failed pass: %+v", r)
	}
}
