package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
	"github.com/anepack/anepack/runtime/testmodel"
)

// onApple reports whether the ANE driver may be available here.
func onApple() bool { return goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64" }

// expectedSim generates greedily from the raw text with the sim backend in this process: what
// `anerun --backend sim --raw` must print.
func expectedSim(t *testing.T, path, text string, max int) string {
	t.Helper()
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := ane.New(m, ane.Options{Eval: ane.EvalSim})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := runtime.NewSession(m, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Generate(context.Background(), encodeRaw(tok, text), runtime.GenerateOptions{MaxTokens: max, Sampling: runtime.DefaultSampling(m.Generation())})
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

// TestGenerateSim generates through the real binary on the sim backend (the bundle's ANE
// programs in the MIL simulator), decoding on the programs, then on the CPU with --ane-check.
func TestGenerateSim(t *testing.T) {
	path := bundle(t)
	const text = "The quick brown fox"
	want := expectedSim(t, path, text, 8)
	r := anerun(t, "", path, "--backend", "sim", "--raw", text, "-n", "8", "--verbose")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != want+"\n" {
		t.Errorf("stdout %q; want %q", r.stdout, want+"\n")
	}
	if !strings.Contains(r.stderr, "backend sim") {
		t.Errorf("--verbose does not name the sim backend:\n%s", r.stderr)
	}
	r = anerun(t, "", path, "--backend", "sim", "--decode-on", "cpu", "--ane-check", "--raw", text, "-n", "4")
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("--decode-on cpu --ane-check: exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
	}
}

// TestLogitsSimVsCPU is the golden comparison an Apple Silicon user runs with --backend ane:
// `anerun logits` on the sim and on the CPU give the same top ids, with logits within the sim
// tests' tolerance (2e-2), after a batched prefill and at KV-cache decode steps.
func TestLogitsSimVsCPU(t *testing.T) {
	path := bundle(t)
	ids := testmodel.LoadGolden(t, "qwen2-tiny").Cases[0].PromptIDs
	var list []string
	for _, id := range ids {
		list = append(list, strconv.Itoa(id))
	}
	args := []string{"logits", path, "--ids", strings.Join(list, ","), "--top", "4", "--prefill", "6"}
	type out struct {
		Positions []struct {
			Pos int          `json:"pos"`
			Top [][2]float64 `json:"top"`
		} `json:"positions"`
	}
	var res [2]out
	for i, backend := range []string{"cpu", "sim"} {
		r := anerun(t, "", append(args, "--backend", backend)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", backend, r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), &res[i]); err != nil {
			t.Fatalf("%s: %v\n%s", backend, err, r.stdout)
		}
	}
	if len(res[0].Positions) != len(ids) || len(res[1].Positions) != len(ids) {
		t.Fatalf("%d and %d positions; want %d", len(res[0].Positions), len(res[1].Positions), len(ids))
	}
	worst := 0.0
	for p := range ids {
		c, s := res[0].Positions[p].Top, res[1].Positions[p].Top
		for j := range c {
			worst = max(worst, math.Abs(c[j][1]-s[j][1]))
		}
		if c[0][0] != s[0][0] && c[0][1]-c[1][1] > 4e-2 {
			t.Errorf("position %d: top id %v on the CPU, %v in the sim", p, c[0], s[0])
		}
	}
	if worst > 2e-2 {
		t.Errorf("largest difference of the top logits %.2e; want <= 2e-2", worst)
	}
}

// TestBenchSim: `anerun bench --backend sim --json` runs and names the backend.
func TestBenchSim(t *testing.T) {
	r := anerun(t, "", "bench", bundle(t), "--backend", "sim", "-p", "40", "-n", "2", "-r", "1", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Backend != "sim" || !(res.PrefillTokensPerS > 0) || !(res.DecodeTokensPerS > 0) {
		t.Errorf("bench --json: %q (%v)", r.stdout, err)
	}
}

// TestANEBackendErrors: a bundle packed with --no-ane, the ANE off Apple Silicon and a bad
// --decode-on each give a clear error; auto falls back to the CPU.
func TestANEBackendErrors(t *testing.T) {
	path := bundle(t)
	noANE := filepath.Join(t.TempDir(), "noane.aneb")
	if err := testmodel.Rewrite(path, noANE, func(m *format.Manifest) { m.Programs = nil }); err != nil {
		t.Fatal(err)
	}
	type errCase struct {
		name string
		args []string
		want []string
	}
	cases := []errCase{
		{"no programs on sim", []string{noANE, "hi", "--backend", "sim"}, []string{"noane.aneb", "no ANE programs", "without --no-ane", "anepack"}},
		{"no programs on ane", []string{noANE, "hi", "--backend", "ane"}, []string{"no ANE programs", "without --no-ane"}},
		{"bad --decode-on", []string{path, "hi", "--backend", "sim", "--decode-on", "gpu"}, []string{`--decode-on "gpu"`}},
	}
	if !onApple() {
		cases = append(cases, errCase{"ane off Apple Silicon", []string{path, "hi", "--backend", "ane"}, []string{"not available", "not an Apple Silicon Mac", "--backend sim"}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := anerun(t, "", tc.args...)
			if r.code == 0 {
				t.Fatalf("exit 0; stdout %q", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
		})
	}
	if r := anerun(t, "", noANE, "--raw", "hi", "-n", "2", "--verbose"); r.code != 0 || !strings.Contains(r.stderr, "backend cpu") {
		t.Errorf("auto on a --no-ane bundle: exit %d: %s", r.code, r.stderr)
	}
}

// TestDoctorBinary: `anerun doctor` through the real binary; off Apple Silicon auto is cpu.
func TestDoctorBinary(t *testing.T) {
	r := anerun(t, "", "doctor", bundle(t))
	if r.code != 0 || !strings.Contains(r.stdout, "ane:") || !strings.Contains(r.stdout, "35 ANE programs") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !onApple() && !strings.Contains(r.stdout, "auto:      cpu") {
		t.Errorf("off Apple Silicon auto should pick cpu:\n%s", r.stdout)
	}
}
