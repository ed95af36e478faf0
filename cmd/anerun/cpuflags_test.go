package main

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime/kernels"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestISAFlag runs the binary with --isa go, and with $ANERUN_ISA=go: bench reports
// the level and doctor every CPU kernel in Go, and logits through a prefill and decode steps agree with those of
// the best kernels within float32 rounding. A level this build does not have is refused,
// naming the flag or the variable it came from and the levels there are.
func TestISAFlag(t *testing.T) {
	args := []string{"logits", bundle(t), "--ids", goldenIDs(t, 8), "--prefill", "5", "--top", "4"}
	best := logitsOf(t, anerun(t, "", args...))
	inGo := logitsOf(t, anerun(t, "", append(args, "--isa", "go")...))
	if len(best) != len(inGo) || len(best) != 8 {
		t.Fatalf("%d and %d positions, want 8", len(best), len(inGo))
	}
	for p := range best {
		b, g := best[p], inGo[p]
		if d := math.Abs(b[0][1] - g[0][1]); d > 1e-4*(1+math.Abs(b[0][1])) {
			t.Errorf("position %d: top logit %v with the best kernels, %v in Go", p, b[0], g[0])
		}
		if b[0][0] != g[0][0] && b[0][1]-b[1][1] > 1e-4 {
			t.Errorf("position %d: top token %v with the best kernels, %v in Go", p, b[0], g[0])
		}
	}

	t.Setenv(isaEnv, "go")
	r := anerun(t, "", "bench", bundle(t), "--prompt-tokens", "8", "--gen-tokens", "2", "--repetitions", "1", "--json")
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil || res.ISA != "go" {
		t.Errorf("bench with $%s=go: exit %d, %v, isa %q: %s", isaEnv, r.code, err, res.ISA, r.stderr)
	}
	r = anerun(t, "", "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil {
		t.Fatalf("doctor with $%s=go: exit %d, %v: %s", isaEnv, r.code, err, r.stderr)
	}
	if rep.ISA != "go" || rep.CPUKernels != "go" || strings.Join(rep.ISALevels, ",") != strings.Join(kernels.ISALevels(), ",") {
		t.Errorf("doctor with $%s=go: isa %q, cpu kernels %q, levels %v", isaEnv, rep.ISA, rep.CPUKernels, rep.ISALevels)
	}
	for _, k := range rep.Kernels {
		if k.Impl != "go" {
			t.Errorf("doctor with $%s=go: %s runs %q", isaEnv, k.Op, k.Impl)
		}
	}

	t.Setenv(isaEnv, "avx9")
	if r := anerun(t, "", args...); r.code == 0 || !strings.Contains(r.stderr, "$"+isaEnv+`: instruction-set level "avx9"`) || !strings.Contains(r.stderr, "go)") {
		t.Errorf("$%s=avx9: exit %d, %q", isaEnv, r.code, r.stderr)
	}
	if r := anerun(t, "", append(args, "--isa", "sse2")...); r.code == 0 || !strings.Contains(r.stderr, `--isa: instruction-set level "sse2"`) {
		t.Errorf("--isa sse2: exit %d, %q", r.code, r.stderr)
	}
}

// goldenIDs returns the first n prompt ids of the tiny model's first golden case, as --ids takes
// them.
func goldenIDs(t *testing.T, n int) string {
	t.Helper()
	var ids []string
	for _, id := range testmodel.LoadGolden(t, "qwen2-tiny").Cases[0].PromptIDs[:n] {
		ids = append(ids, strconv.Itoa(id))
	}
	return strings.Join(ids, ",")
}

// logitsOf parses the output of anerun logits: each position's top (id, logit) pairs.
func logitsOf(t *testing.T, r result) [][][2]float64 {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("logits: exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Positions []struct {
			Top [][2]float64 `json:"top"`
		} `json:"positions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("logits output: %v: %s", err, r.stdout)
	}
	var tops [][][2]float64
	for _, p := range out.Positions {
		if len(p.Top) < 2 {
			t.Fatalf("logits output: a position with %d values", len(p.Top))
		}
		tops = append(tops, p.Top)
	}
	return tops
}
