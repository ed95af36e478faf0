package ane

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/mil"
)

// TestProbeProgramsInSim runs every probe program in the simulator: each must parse, compile
// and give the output computed from its weights' definition, in its blob layout. The list
// covers what the probe promises: both layouts, fp16, int8, uint4 and LUT4 weights, 4 KiB
// and 64 KiB surfaces, 896-, 32000- and 50688-row projections.
func TestProbeProgramsInSim(t *testing.T) {
	passes := RunProbe(nil, 1, ProbeHooks{})
	if len(passes) != 1 {
		t.Fatalf("%d passes", len(passes))
	}
	seen := map[string]bool{}
	for _, r := range passes[0].Results {
		if !r.OK || r.Error != "" || r.MaxRelErr > 2e-3 {
			t.Errorf("%s: ok %v, error %q, off by %.3g", r.Name, r.OK, r.Error, r.MaxRelErr)
		}
		seen[r.Weights+"/"+r.Layout] = true
		seen[r.Name] = true
	}
	for _, want := range []string{selfTestName, "surface-4k", "fp16/packed", "fp16/split", "int8/packed", "uint4/packed", "uint4/split", "lut4/packed", "lut4/split",
		"lut4-ios16-896-packed", "lut4-ios18-896-packed", "rows-32000", "rows-50688"} {
		if !seen[want] {
			t.Errorf("no probe program covers %s", want)
		}
	}
	if passes[0].Compiles != 0 {
		t.Errorf("the sim counted %d compiles", passes[0].Compiles)
	}
}

// TestProbeProgramsText checks what the probe programs say about themselves: the
// serialisations the ANE needs (iOS16 attribute form for the affine op, inline iOS18 inputs
// for blockwise and the iOS18 LUT, a program(1.0)/ios16 program for the iOS16 LUT), and a
// wrong output is reported as one.
func TestProbeProgramsText(t *testing.T) {
	for name, want := range map[string][]string{
		"int8-896":                    {`= constexpr_affine_dequantize()[name = string("w"), axis = int32(0)`, "quantized_data = tensor<int8, [896, 896, 1, 1]>(BLOBFILE(", "zero_point = int8(0)"},
		"uint4-896-packed":            {"constexpr_blockwise_shift_scale(data = tensor<uint4, [896, 896, 1, 1]>(BLOBFILE(", "scale = tensor<fp16, [896, 28, 1, 1]>(BLOBFILE("},
		"lut4-ios18-896-packed":       {"constexpr_lut_to_dense(indices = tensor<uint4, [896, 896, 1, 1]>(BLOBFILE(", "lut = tensor<fp16, [112, 1, 1, 1, 16, 1]>"},
		"lut4-ios16-896-packed":       {"program(1.0)", "func main<ios16>", `constexpr_lut_to_dense()[name = tensor<string, []>("w"), indices = tensor<uint8, [401408]>`, "shape = tensor<uint32, [4]>([896, 896, 1, 1])"},
		"fp16-896-" + mil.LayoutSplit: {"offset = uint64(1605760)"},
	} {
		p := probeCase(t, name)
		for _, w := range want {
			if !strings.Contains(string(p.MIL), w) {
				t.Errorf("%s: text lacks %q", name, w)
			}
		}
	}
	p := probeCase(t, selfTestName)
	out := append([]uint16(nil), p.X...)
	if _, ok := p.Check(out); !ok {
		t.Error("the right output fails the check")
	}
	out[5] ^= 0x8000
	if rel, ok := p.Check(out); ok || rel == 0 {
		t.Error("a wrong output passes the check")
	}
}

// TestProbeOnDriver runs the probe's smaller programs twice through the driver over the fake
// framework: every program passes, the first pass compiles each distinct program once, and
// the second compiles nothing (all from the compile cache).
func TestProbeOnDriver(t *testing.T) {
	var cases []ProbeCase
	for _, c := range ProbePrograms() {
		if !strings.HasPrefix(c.Name, "rows-") {
			cases = append(cases, c)
		}
	}
	d, _ := newFakeDriver(newFakeDaemon(), t.TempDir())
	passes := runProbe(driverProbe{d}, d, cases, 2, ProbeHooks{})
	for i, pass := range passes {
		for _, r := range pass.Results {
			if !r.OK {
				t.Errorf("pass %d: %s: %s", i+1, r.Name, r.Error)
			}
			if r.Surface == 0 {
				t.Errorf("pass %d: %s: no surface size", i+1, r.Name)
			}
		}
	}
	// The self-test and surface-4k are one program; so are the packed and split programs
	// whose blob holds one record (none here), so 10 distinct programs.
	if passes[0].Compiles != len(cases)-1 || passes[1].Compiles != 0 || passes[1].CacheLoads != len(cases) {
		t.Errorf("compiles %d then %d (cache loads %d); want %d then 0 (%d)", passes[0].Compiles, passes[1].Compiles, passes[1].CacheLoads, len(cases)-1, len(cases))
	}
	if got := LayoutFinding(passes[0].Results); got != mil.LayoutPacked {
		t.Errorf("layout finding %q; want packed", got)
	}
}

// TestProbeFindsSplitLayout: on a machine that refuses weight files of several records (the
// M1 report), the packed programs fail with the compiler's error, their split twins pass,
// and the finding is the split layout; the self-test finds the same.
func TestProbeFindsSplitLayout(t *testing.T) {
	daemon := newFakeDaemon()
	daemon.oneRecordOnly = true
	d, _ := newFakeDriver(daemon, t.TempDir())
	var cases []ProbeCase
	for _, c := range ProbePrograms() {
		if strings.HasPrefix(c.Name, "fp16-896") || strings.HasPrefix(c.Name, "uint4") {
			cases = append(cases, c)
		}
	}
	results := runProbe(driverProbe{d}, d, cases, 1, ProbeHooks{})[0].Results
	for _, r := range results {
		wantOK := r.Layout == mil.LayoutSplit
		if r.OK != wantOK || (!wantOK && !strings.Contains(r.Error, "InvalidMILProgram")) {
			t.Errorf("%s: ok %v (%s)", r.Name, r.OK, r.Error)
		}
	}
	if got := LayoutFinding(results); got != mil.LayoutSplit {
		t.Errorf("layout finding %q; want split", got)
	}
	d2, _ := newFakeDriver(daemon, t.TempDir())
	rec := SelfTest(d2)
	if !rec.Passed || rec.BlobLayout != mil.LayoutSplit || len(rec.Results) != 3 {
		t.Errorf("self-test %+v", rec)
	}
}

// TestLayoutFinding covers the rule on its own.
func TestLayoutFinding(t *testing.T) {
	r := func(name string, ok bool) ProbeResult {
		layout := mil.LayoutPacked
		if strings.HasSuffix(name, mil.LayoutSplit) {
			layout = mil.LayoutSplit
		}
		return ProbeResult{Name: name, Layout: layout, OK: ok}
	}
	for _, c := range []struct {
		results []ProbeResult
		want    string
	}{
		{[]ProbeResult{r("a-packed", true), r("a-split", true)}, mil.LayoutPacked},
		{[]ProbeResult{r("a-packed", false), r("a-split", true)}, mil.LayoutSplit},
		{[]ProbeResult{r("a-packed", false), r("a-split", true), r("b-packed", true), r("b-split", false)}, mil.LayoutPacked},
		{[]ProbeResult{r("a-packed", false), r("a-split", false)}, ""},
		{[]ProbeResult{r("self-test", true)}, ""},
	} {
		if got := LayoutFinding(c.results); got != c.want {
			t.Errorf("%+v: %q; want %q", c.results, got, c.want)
		}
	}
}
