package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime/kernels"
	"github.com/anepack/anepack/runtime/testmodel"
)

// runDoctor runs the doctor command in this process and returns its output.
func runDoctor(t *testing.T, args ...string) string {
	t.Helper()
	cmd := newDoctorCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("doctor %q: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// TestDoctor checks the report on this machine: off Apple Silicon the ANE is unavailable with
// a reason and auto picks the CPU; a bundle's programs are counted and planned (the tiny model's
// 2 layers x 3 groups x 5 buckets + 5 LM-head chunks = 35, all within the budget of 100); a
// --no-ane bundle is named as such.
func TestDoctor(t *testing.T) {
	var r doctorReport
	if err := json.Unmarshal([]byte(runDoctor(t, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	if r.OS != goruntime.GOOS || r.Arch != goruntime.GOARCH || r.CPUs < 1 || r.Threads < 1 || r.Threads > r.CPUs || r.Go == "" || r.ANE.CompileBudget != 100 || len(r.Backends) != 3 {
		t.Errorf("report %+v", r)
	}
	onApple := goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64"
	if !onApple {
		if r.ANE.Available || r.ANE.Reason == "" || r.Auto != "cpu" || !strings.Contains(r.AutoReason, "not available") {
			t.Errorf("off Apple Silicon: ane %+v, auto %q (%s)", r.ANE, r.Auto, r.AutoReason)
		}
	}
	if len(r.Kernels) != len(kernels.Kernels()) {
		t.Errorf("kernels %+v, want one entry per operation of kernels.Kernels()", r.Kernels)
	}
	text := runDoctor(t)
	if !slices.Contains(r.Architectures, "Qwen3ForCausalLM") || !slices.Contains(r.Architectures, "GPT2LMHeadModel") {
		t.Errorf("architectures %v", r.Architectures)
	}
	for _, w := range []string{"system:", "cpu:", "ane:", "backend:   sim  yes", "auto:      " + r.Auto, "matmul f16/f32 (prefill):", "matmul q8/q4:", "models:    GPT2LMHeadModel, Gemma3ForCausalLM, LlamaForCausalLM"} {
		if !strings.Contains(text, w) {
			t.Errorf("doctor output lacks %q:\n%s", w, text)
		}
	}

	path := testmodel.Bundle(t, "qwen2-tiny", "f16")
	r = doctorReport{}
	if err := json.Unmarshal([]byte(runDoctor(t, path, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	if b := r.Bundle; b == nil || b.Programs != 35 || b.Compiles != 35 || len(b.Buckets) != 5 || b.Problem != "" {
		t.Errorf("bundle report %+v", r.Bundle)
	}
	noANE := filepath.Join(t.TempDir(), "noane.aneb")
	if err := testmodel.Rewrite(path, noANE, func(m *format.Manifest) { m.Programs = nil }); err != nil {
		t.Fatal(err)
	}
	text = runDoctor(t, noANE)
	if !strings.Contains(text, "0 ANE programs; no ANE programs: pack it again without --no-ane") || !strings.Contains(text, "auto:      cpu") {
		t.Errorf("doctor on a --no-ane bundle:\n%s", text)
	}
}
