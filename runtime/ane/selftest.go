package ane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/anepack/anepack/mil"
)

// SelfTestFile is the file, in the anepack store directory, that remembers the self-test's
// outcome for each OS build.
const SelfTestFile = "ane-selftest.json"

// selfTestVersion names what the self-test checks and how the driver runs it: a record of
// another version is run again, so that a fixed driver gets a new chance on a machine where
// an older one failed.
const selfTestVersion = 1

// SelfTestRecord is the outcome of the self-test on one OS build of one machine.
type SelfTestRecord struct {
	OSBuild string `json:"os_build"` // kern.osversion: an OS update changes the ANE compiler
	Chip    string `json:"chip"`
	Version int    `json:"version"`
	Passed  bool   `json:"passed"`
	Reason  string `json:"reason,omitempty"` // why it failed
	// BlobLayout is the blob layout found to work: mil.LayoutPacked, or mil.LayoutSplit where
	// only one record per file works; "" when unknown.
	BlobLayout string `json:"blob_layout,omitempty"`
	// Constexpr is how quantized weights compile here: ConstexprNative where the probe's int8
	// and uint4 programs ran, ConstexprExpand where one failed; "" until the probe has run.
	Constexpr string        `json:"constexpr,omitempty"`
	Results   []ProbeResult `json:"results,omitempty"`
	When      time.Time     `json:"when"`
}

// selfTestPrograms are the probe programs of the self-test: the identity must give its
// input back, then the two-record fp16 program finds the blob layout (split is compiled only
// when packed fails).
var selfTestPrograms = []string{selfTestName, "fp16-896-" + mil.LayoutPacked, "fp16-896-" + mil.LayoutSplit}

// SelfTest runs the self-test on d (three compiles at most, once per OS build) and returns
// its record, without OSBuild and Chip, which the caller knows.
func SelfTest(d *Driver) SelfTestRecord {
	cases := map[string]ProbeCase{}
	for _, c := range ProbePrograms() {
		cases[c.Name] = c
	}
	run := func(name string) ProbeResult {
		return runProbe(driverProbe{d}, d, []ProbeCase{cases[name]}, 1, ProbeHooks{})[0].Results[0]
	}
	rec := SelfTestRecord{Version: selfTestVersion, When: time.Now().UTC()}
	id := run(selfTestName)
	rec.Results = append(rec.Results, id)
	if !id.OK {
		rec.Reason = fmt.Sprintf("%s: %s", id.Name, id.Error)
		return rec
	}
	rec.Passed = true
	packed := run(selfTestPrograms[1])
	rec.Results = append(rec.Results, packed)
	if packed.OK {
		rec.BlobLayout = mil.LayoutPacked
		return rec
	}
	split := run(selfTestPrograms[2])
	rec.Results = append(rec.Results, split)
	rec.BlobLayout = LayoutFinding(rec.Results)
	return rec
}

// SelfTestCache is the self-test file at Path.
type SelfTestCache struct {
	Path string
}

// selfTestDoc is the file's content: one record per OS build.
type selfTestDoc struct {
	Records map[string]SelfTestRecord `json:"records"`
}

func (c SelfTestCache) read() (selfTestDoc, error) {
	doc := selfTestDoc{Records: map[string]SelfTestRecord{}}
	b, err := os.ReadFile(c.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return selfTestDoc{Records: map[string]SelfTestRecord{}}, fmt.Errorf("%s: %w (it is rewritten by the next self-test)", c.Path, err)
	}
	if doc.Records == nil {
		doc.Records = map[string]SelfTestRecord{}
	}
	return doc, nil
}

// Lookup returns the record of an OS build on this chip, if there is one of the current
// version.
func (c SelfTestCache) Lookup(osBuild, chip string) (SelfTestRecord, bool, error) {
	doc, err := c.read()
	if err != nil {
		return SelfTestRecord{}, false, err
	}
	r, ok := doc.Records[osBuild]
	if !ok || r.Chip != chip || r.Version != selfTestVersion {
		return SelfTestRecord{}, false, nil
	}
	return r, true, nil
}

// LookupHost returns the record of host's OS build on its chip (Lookup with host's key: its
// build, or its release where the build is unknown).
func (c SelfTestCache) LookupHost(host Report) (SelfTestRecord, bool, error) {
	return c.Lookup(osKey(host), host.Chip)
}

// Store records r (replacing the record of its OS build), writing the file atomically.
func (c SelfTestCache) Store(r SelfTestRecord) error {
	doc, _ := c.read() // an unreadable file is replaced
	doc.Records[r.OSBuild] = r
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(c.Path, append(b, '\n')); err != nil {
		return fmt.Errorf("ane: writing the self-test record %s: %w", c.Path, err)
	}
	return nil
}

// Remove deletes the file: every OS build is tested again.
func (c SelfTestCache) Remove() error {
	if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// DefaultSelfTestCache is SelfTestFile in dir (the anepack store directory).
func DefaultSelfTestCache(dir string) SelfTestCache {
	return SelfTestCache{Path: filepath.Join(dir, SelfTestFile)}
}

// AutoChoice is what `--backend auto` does with the ANE.
type AutoChoice struct {
	UseANE    bool
	Layout    string // blob layout to use: from the self-test, "" when it found none
	Constexpr string // how quantized weights compile here (ConstexprFinding), "" when unknown
	Reason    string // one line: why (not) the ANE
	Ran       bool   // the self-test ran now (it was not in the cache)
}

// osKey is the cache key of a machine's OS: its build, or its release when the build is
// unknown.
func osKey(host Report) string {
	if host.OSBuild != "" {
		return host.OSBuild
	}
	return host.OS
}

// DecideAuto decides whether `--backend auto` may use the ANE: only where it is available and
// the self-test passed on this OS build. The outcome is cached; run performs the self-test
// when the cache has no record (it should run it in a child process, so that a crash inside
// the framework is a failed test rather than a dead process); a nil run declines the ANE there
// and records nothing.
func DecideAuto(host Report, cache SelfTestCache, run func() SelfTestRecord) AutoChoice {
	if !host.Available {
		return AutoChoice{Reason: "the ANE is not available: " + host.Reason}
	}
	key := osKey(host)
	rec, ok, _ := cache.Lookup(key, host.Chip)
	ran := false
	var storeErr error
	if !ok && run == nil {
		return AutoChoice{Reason: fmt.Sprintf("the ANE self-test has not run on this OS build (%s); `anerun doctor --probe` runs it", key)}
	}
	if !ok {
		rec = run()
		rec.OSBuild, rec.Chip, rec.Version, ran = key, host.Chip, selfTestVersion, true
		if rec.When.IsZero() {
			rec.When = time.Now().UTC()
		}
		storeErr = cache.Store(rec)
	}
	when := rec.When.Local().Format("2006-01-02")
	if !rec.Passed {
		return AutoChoice{Ran: ran, Reason: fmt.Sprintf("the ANE self-test failed on this OS build (%s, %s): %s; `anerun doctor --probe` shows more", key, when, rec.Reason)}
	}
	c := AutoChoice{UseANE: true, Layout: rec.BlobLayout, Constexpr: rec.Constexpr, Ran: ran,
		Reason: fmt.Sprintf("the ANE self-test passed on this OS build (%s, %s)", key, when)}
	if storeErr != nil {
		c.Reason += " (not remembered: " + storeErr.Error() + ")"
	}
	return c
}

// SelfTestFromProbe makes the self-test record of a probe pass run on the ANE: the probe runs
// the self-test's programs and more, so its finding replaces the cached one (the blob layout
// from every program that ran in both layouts).
func SelfTestFromProbe(pass ProbePass) SelfTestRecord {
	rec := SelfTestRecord{Version: selfTestVersion, When: time.Now().UTC(), Results: pass.Results,
		BlobLayout: LayoutFinding(pass.Results), Constexpr: ConstexprFinding(pass.Results),
		Reason: "the probe did not run the self-test program"}
	for _, r := range pass.Results {
		if r.Name == selfTestName {
			rec.Passed, rec.Reason = r.OK, ""
			if !r.OK {
				rec.Reason = r.Name + ": " + r.Error
			}
		}
	}
	return rec
}
