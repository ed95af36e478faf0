package main

import (
	"encoding/json"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"

	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/backend"
)

// probeReport is what `anerun doctor --probe` finds, in the shape a user pastes into an issue.
type probeReport struct {
	Probe     string `json:"probe"` // what made it: "anerun doctor --probe"
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	OSVersion string `json:"os_version,omitempty"`
	OSBuild   string `json:"os_build,omitempty"`
	Chip      string `json:"chip,omitempty"`
	Go        string `json:"go"`
	ANE       struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason,omitempty"`
	} `json:"ane"`
	Evaluator string          `json:"evaluator"` // "ane", or "sim" where the ANE is unavailable
	Passes    []ane.ProbePass `json:"passes"`
	// BlobLayout is the layout the first pass on the ANE found to work ("" when it says
	// nothing, and in the simulator, which takes both).
	BlobLayout string `json:"blob_layout,omitempty"`
}

// runProbe runs the probe: on the ANE twice (the second pass must compile nothing), in the
// simulator once where there is no ANE. Progress goes to errw, one line per program, before it
// runs (so that a crash names the program) and after. On the ANE the first pass replaces the
// self-test record of this OS build, so --backend auto follows what the probe found.
func runProbe(w, errw io.Writer, asJSON bool) error {
	host := ane.Probe()
	rep := probeReport{Probe: "anerun doctor --probe", OS: goruntime.GOOS, Arch: goruntime.GOARCH, OSVersion: host.OS,
		OSBuild: host.OSBuild, Chip: host.Chip, Go: goruntime.Version(), Evaluator: ane.EvalSim}
	rep.ANE.Available, rep.ANE.Reason = host.Available, host.Reason
	var d *ane.Driver
	passes := 1
	if host.Available {
		var err error
		if d, err = ane.Open(); err != nil {
			rep.ANE.Available, rep.ANE.Reason = false, err.Error()
		} else {
			rep.Evaluator, passes = ane.EvalANE, 2
		}
	}
	if !asJSON {
		if rep.Evaluator == ane.EvalSim {
			fmt.Fprintf(w, "ane: unavailable (%s); these are the simulator's results of the programs the probe would run on the ANE\n", rep.ANE.Reason)
		} else {
			fmt.Fprintf(w, "ane: probing %s (%s, build %s): every program twice; the second pass must compile nothing\n", host.Chip, host.OS, host.OSBuild)
		}
	}
	hooks := ane.ProbeHooks{
		Start: func(pass int, name string) { fmt.Fprintf(errw, "probe: pass %d: %s ...\n", pass+1, name) },
		Done: func(pass int, r ane.ProbeResult) {
			status := "ok"
			if !r.OK {
				status = "FAILED"
			}
			fmt.Fprintf(errw, "probe: pass %d: %s %s\n", pass+1, r.Name, status)
		},
	}
	if rep.OSVersion == goruntime.GOOS+"/"+goruntime.GOARCH {
		rep.OSVersion = "" // the stub's placeholder says nothing more
	}
	rep.Passes = ane.RunProbe(d, passes, hooks)
	if d != nil {
		rep.BlobLayout = ane.LayoutFinding(rep.Passes[0].Results)
		rec := ane.SelfTestFromProbe(rep.Passes[0])
		rec.OSBuild, rec.Chip = host.OSBuild, host.Chip
		if rec.OSBuild == "" {
			rec.OSBuild = host.OS
		}
		if cache, err := backend.SelfTests(""); err == nil {
			if err := cache.Store(rec); err != nil {
				fmt.Fprintf(errw, "probe: %v\n", err)
			}
		}
	}
	if !asJSON {
		printProbe(w, &rep)
		fmt.Fprintln(w, "\nThe report as JSON (paste it into an issue):")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// printProbe writes the probe's table: one line per program and pass.
func printProbe(w io.Writer, rep *probeReport) {
	for i, pass := range rep.Passes {
		fmt.Fprintf(w, "\npass %d", i+1)
		if rep.Evaluator == ane.EvalANE {
			fmt.Fprintf(w, ": %d compiles, %d loads from the compile cache", pass.Compiles, pass.CacheLoads)
		} else {
			fmt.Fprint(w, " (simulator)")
		}
		fmt.Fprintf(w, "\n%-24s %-7s %-7s %8s  %-6s %9s %9s %9s  %s\n", "program", "weights", "layout", "surface", "result", "rel err", "load ms", "eval ms", "note")
		for _, r := range pass.Results {
			surface, result := "-", "ok"
			if r.Surface > 0 {
				surface = fmt.Sprintf("%d KiB", r.Surface>>10)
			}
			if !r.OK {
				result = "FAIL"
			}
			note := r.Error
			if rep.Evaluator == ane.EvalANE {
				if r.Compiled {
					note = strings.TrimSpace("compiled " + note)
				} else if r.Error == "" {
					note = "from the cache"
				}
			}
			fmt.Fprintf(w, "%-24s %-7s %-7s %8s  %-6s %9.2e %9.1f %9.1f  %s\n", r.Name, r.Weights, r.Layout, surface, result, r.MaxRelErr, r.LoadMS, r.EvalMS, note)
		}
	}
	switch rep.BlobLayout {
	case mil.LayoutSplit:
		fmt.Fprintln(w, "\nblob layout: only one tensor per weight file works here; --ane-blob-layout auto uses split")
	case mil.LayoutPacked:
		fmt.Fprintln(w, "\nblob layout: the bundle's packed weight files work here")
	}
}
