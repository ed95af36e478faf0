package ane

import (
	"fmt"
	"strings"
	"time"

	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
)

// ProbeResult is the outcome of one probe program on one evaluator.
type ProbeResult struct {
	Name      string  `json:"name"`
	Weights   string  `json:"weights"`
	Layout    string  `json:"layout"`
	Surface   int     `json:"surface_bytes,omitempty"` // input surface allocated (ANE only)
	OK        bool    `json:"ok"`
	Error     string  `json:"error,omitempty"`
	MaxRelErr float64 `json:"max_rel_err"` // largest |got − want| / max |want|
	Compiled  bool    `json:"compiled"`    // the ANE compiled it (false: loaded from its cache)
	LoadMS    float64 `json:"load_ms"`     // stage + compile or cache load (sim: parse + compile)
	EvalMS    float64 `json:"eval_ms"`
}

// ProbePass is one run of every probe program.
type ProbePass struct {
	Compiles   int           `json:"compiles"`    // programs the ANE compiled in this pass
	CacheLoads int           `json:"cache_loads"` // programs loaded from the compile cache
	Results    []ProbeResult `json:"results"`
}

// probeEvaluator runs one probe program: on the ANE through the driver, or in the sim.
type probeEvaluator interface {
	run(p *ProbeProgram) (out []uint16, r ProbeResult, err error)
}

// ProbeHooks follow a probe run. Either may be nil.
type ProbeHooks struct {
	// Start is called before a program runs: if the framework aborts the process, the last
	// name printed is the program that did it.
	Start func(pass int, name string)
	// Done is called with each result.
	Done func(pass int, r ProbeResult)
}

// RunProbe runs every probe program passes times: on the ANE through d, or in the simulator
// when d is nil. On the ANE a second pass should compile nothing: every program loads from
// the compile cache the first pass filled.
func RunProbe(d *Driver, passes int, hooks ProbeHooks) []ProbePass {
	var ev probeEvaluator = simProbe{}
	if d != nil {
		ev = driverProbe{d}
	}
	return runProbe(ev, d, ProbePrograms(), passes, hooks)
}

func runProbe(ev probeEvaluator, d *Driver, cases []ProbeCase, passes int, hooks ProbeHooks) []ProbePass {
	out := make([]ProbePass, passes)
	for pass := range out {
		var before Counts
		if d != nil {
			before = d.Counts()
		}
		for _, c := range cases {
			if hooks.Start != nil {
				hooks.Start(pass, c.Name)
			}
			p := c.Build()
			got, r, err := ev.run(p)
			r.Name, r.Weights, r.Layout = p.Name, p.Weights, p.Layout
			if err != nil {
				r.Error = err.Error()
			} else {
				r.MaxRelErr, r.OK = p.Check(got)
				if !r.OK {
					r.Error = fmt.Sprintf("wrong result: off by %.3g of the output's magnitude (tolerance %.3g)", r.MaxRelErr, p.Tol)
				}
			}
			out[pass].Results = append(out[pass].Results, r)
			if hooks.Done != nil {
				hooks.Done(pass, r)
			}
		}
		if d != nil {
			after := d.Counts()
			out[pass].Compiles = after.Compiles - before.Compiles
			out[pass].CacheLoads = after.CacheLoads - before.CacheLoads
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// driverProbe runs probe programs on the ANE.
type driverProbe struct{ d *Driver }

func (e driverProbe) run(p *ProbeProgram) ([]uint16, ProbeResult, error) {
	var r ProbeResult
	r.Surface = surfaceSize(p.In.Bytes, p.ExactSurfaces)
	before := e.d.Counts().Compiles
	start := time.Now()
	prog, err := e.d.Compile(p.Spec())
	r.LoadMS = ms(time.Since(start))
	r.Compiled = e.d.Counts().Compiles > before
	if err != nil {
		return nil, r, err
	}
	defer prog.Close()
	out := make([]uint16, p.Out.Bytes/2)
	start = time.Now()
	err = prog.Eval([][]byte{u16Bytes(p.X)}, [][]byte{u16Bytes(out)})
	r.EvalMS = ms(time.Since(start))
	return out, r, err
}

// simProbe runs probe programs in the simulator, in their blob layout.
type simProbe struct{}

func (simProbe) run(p *ProbeProgram) ([]uint16, ProbeResult, error) {
	var r ProbeResult
	k, text, weights := p.Record(), p.MIL, p.Blobs
	if p.Layout == mil.LayoutSplit {
		t, w, err := mil.SplitBlobs(p.MIL, p.Blobs)
		if err != nil {
			return nil, r, err
		}
		text, weights = t, w
	}
	start := time.Now()
	l, err := (&dispatch.SimBackend{}).Load(k, text, weights)
	r.LoadMS = ms(time.Since(start))
	if err != nil {
		return nil, r, err
	}
	defer l.Close()
	out := make([]uint16, p.Out.Bytes/2)
	start = time.Now()
	err = l.Eval([][]uint16{p.X}, [][]uint16{out}, probeSeq)
	r.EvalMS = ms(time.Since(start))
	return out, r, err
}

// LayoutFinding reads a probe pass for the blob layout to use: mil.LayoutSplit when a
// program failed in the packed layout and passed split, and none did the opposite;
// mil.LayoutPacked when every program that ran in both layouts passed packed; "" when the
// pass says neither (nothing ran in both layouts, or both failed).
func LayoutFinding(results []ProbeResult) string {
	return layoutFinding(results)
}

// ConstexprFinding says how quantized weights should reach the compiler from probe results:
// ConstexprNative when every int8 and uint4 program that ran passed, ConstexprExpand when one
// failed (the dense fp16 fallback), "" when none ran.
func ConstexprFinding(results []ProbeResult) string {
	ran, failed := false, false
	for _, r := range results {
		if r.Weights == "int8" || r.Weights == "uint4" {
			ran, failed = true, failed || !r.OK
		}
	}
	switch {
	case failed:
		return ConstexprExpand
	case ran:
		return ConstexprNative
	}
	return ""
}

func layoutFinding(results []ProbeResult) string {
	byName := map[string]ProbeResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	splitHelps, packedWorks, packedHelps := false, false, false
	for _, r := range results {
		base, isPacked := strings.CutSuffix(r.Name, "-"+mil.LayoutPacked)
		if !isPacked || r.Layout != mil.LayoutPacked {
			continue
		}
		twin, ok := byName[base+"-"+mil.LayoutSplit]
		if !ok || twin.Layout != mil.LayoutSplit {
			continue
		}
		switch {
		case !r.OK && twin.OK:
			splitHelps = true
		case r.OK && !twin.OK:
			packedHelps = true
		case r.OK:
			packedWorks = true
		}
	}
	switch {
	case splitHelps && !packedHelps:
		return mil.LayoutSplit
	case packedWorks || packedHelps:
		return mil.LayoutPacked
	}
	return ""
}
