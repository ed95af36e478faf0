package ane

import (
	"errors"
	"math"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane/internal/dispatch"
	"github.com/anepack/anepack/runtime/testmodel"
)

// prompt returns n token ids of the tiny golden model's long prompt.
func prompt(t testing.TB, n int) []int {
	t.Helper()
	for _, c := range testmodel.LoadGolden(t, "qwen2-tiny").Cases {
		if len(c.PromptIDs) >= n {
			return c.PromptIDs[:n]
		}
	}
	t.Fatalf("no golden prompt has %d tokens", n)
	return nil
}

// TestNoPrograms: a bundle whose manifest lists no programs (what `anepack --no-ane` writes) is
// refused by both evaluators with the command that fixes it, before the ANE is even opened.
func TestNoPrograms(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "f16")
	dst := filepath.Join(t.TempDir(), "noane.aneb")
	if err := testmodel.Rewrite(src, dst, func(m *format.Manifest) { m.Programs = nil }); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, eval := range []string{EvalSim, EvalANE} {
		_, err := New(m, Options{Eval: eval})
		if !errors.Is(err, ErrNoPrograms) {
			t.Fatalf("%s: error %v; want ErrNoPrograms", eval, err)
		}
		for _, want := range []string{"noane.aneb", "--no-ane", "anepack"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", eval, err, want)
			}
		}
	}
}

// TestDamagedPrograms: manifests that pack would never write give errors naming the field.
func TestDamagedPrograms(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "f16")
	for _, tc := range []struct {
		name string
		edit func(m *format.Manifest)
		want string
	}{
		{"text outside the section", func(m *format.Manifest) { m.Programs[0].MILOffset = 1 << 40 }, "mil_offset"},
		{"missing section", func(m *format.Manifest) { m.Programs[3].MIL = "nope" }, `"nope"`},
		{"wrong channels", func(m *format.Manifest) { m.Programs[1].Outputs[0].Shape[1] = 7 }, "config implies"},
		{"missing layer program", func(m *format.Manifest) {
			m.Programs = slices.DeleteFunc(m.Programs, func(k format.Program) bool { return k.Kind == "mlp" && k.Layer == 1 })
		}, "no mlp program for layer 1"},
		{"no decode bucket", func(m *format.Manifest) {
			m.Programs = slices.DeleteFunc(m.Programs, func(k format.Program) bool { return k.Seq == 32 && k.Kind != "lm_head" })
		}, "decode bucket"},
		{"missing LM-head chunk", func(m *format.Manifest) {
			m.Programs = slices.DeleteFunc(m.Programs, func(k format.Program) bool { return k.Kind == "lm_head" && k.Chunk == 1 })
		}, "chunk 1 is missing"},
		{"unknown kind", func(m *format.Manifest) { m.Programs[2].Kind = "attn" }, `"attn"`},
		{"missing blob", func(m *format.Manifest) {
			for i := range m.Programs {
				m.Programs[i].Weights[0].Section = "blob/gone"
			}
		}, "blob/gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "bad.aneb")
			if err := testmodel.Rewrite(src, dst, tc.edit); err != nil {
				t.Fatal(err)
			}
			m, err := runtime.Open(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			b, err := New(m, Options{Eval: EvalSim, Threads: 1})
			if err == nil {
				// Blob sections are read when a program loads: the first Forward must fail.
				defer b.Close()
				st, _ := b.NewState(8)
				err = st.Forward([]int{1, 2}, 0, make([]float32, m.Config.VocabSize))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one mentioning %s", err, tc.want)
			}
		})
	}
}

// TestANEUnavailable: off Apple Silicon the ane evaluator fails with ErrUnavailable and points
// at the sim.
func TestANEUnavailable(t *testing.T) {
	if goruntime.GOOS == "darwin" && goruntime.GOARCH == "arm64" {
		t.Skip("on Apple Silicon the ANE may be available")
	}
	m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny", "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = New(m, Options{Eval: EvalANE})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "--backend sim") {
		t.Fatalf("error %v; want ErrUnavailable suggesting --backend sim", err)
	}
}

// TestLazyLoading: only the buckets a run uses are loaded: a 10-token prompt and decode use
// S = 32 (6 layer programs + 5 LM-head chunks), a 100-token prompt adds the 128 bucket.
func TestLazyLoading(t *testing.T) {
	m, _, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	st, err := b.NewState(128)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := b.Stats().Loaded; n != 0 {
		t.Fatalf("%d programs loaded before the first Forward", n)
	}
	logits := make([]float32, m.Config.VocabSize)
	ids := prompt(t, 100)
	if err := st.Forward(ids[:10], 0, logits); err != nil {
		t.Fatal(err)
	}
	for pos := 10; pos < 13; pos++ {
		if err := st.Forward([]int{argmax(logits)}, pos, logits); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Stats().Loaded; n != 2*3+5 {
		t.Errorf("after a 10-token prompt and decode: %d programs loaded; want 11", n)
	}
	if err := st.Forward(ids, 0, logits); err != nil {
		t.Fatal(err)
	}
	if n := b.Stats().Loaded; n != 2*3*2+5 {
		t.Errorf("after a 100-token prompt: %d programs loaded; want 17", n)
	}
}

// TestPlan checks the bucket plans for a 24-layer model with 5 buckets and 5 LM-head chunks
// (Qwen2.5-0.5B's 365 programs): one bucket of layer programs (72) fits the ANE's budget with
// the LM head (5), two do not.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		layers, budget int
		decodeANE      bool
		want           []int
	}{
		{24, 100, true, []int{32}},
		{24, 100, false, []int{512}},
		{24, -1, true, []int{32, 64, 128, 256, 512}},
		{2, 100, true, []int{32, 64, 128, 256, 512}},
		{2, 20, true, []int{32, 512}},
		{2, 20, false, []int{256, 512}},
		{40, 100, true, []int{32}}, // 125 > 100: the minimum, and lazy loading reports the budget
	} {
		ps := &programSet{groups: []string{"attn_qkv", "attn_o", "mlp"}, layerSeq: []int{32, 64, 128, 256, 512}, lmSeq: []int{32},
			lmRows: []int{30400, 30400, 30400, 30400, 30336}}
		for range tc.layers {
			ps.perLayer = append(ps.perLayer, ps.groups)
		}
		got, lm := ps.plan(tc.budget, tc.decodeANE)
		if !slices.Equal(got, tc.want) || !slices.Equal(lm, []int{32}) {
			t.Errorf("plan(%d layers, budget %d, decode on ANE %v) = %v, %v; want %v, [32]", tc.layers, tc.budget, tc.decodeANE, got, lm, tc.want)
		}
	}
}

// TestCompileBudget: with a budget below what even one bucket needs, the first Forward fails
// with a BudgetError that wraps ErrCompileBudget and says what to do.
func TestCompileBudget(t *testing.T) {
	m, _, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim, CompileBudget: 5})
	st, err := b.NewState(16)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Forward([]int{1, 2, 3}, 0, make([]float32, m.Config.VocabSize))
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrCompileBudget) {
		t.Fatalf("error %v; want a BudgetError", err)
	}
	if be.Loaded != 5 || be.Planned != 11 {
		t.Errorf("loaded %d of %d; want 5 of 11", be.Loaded, be.Planned)
	}
	for _, w := range []string{"Run the command again", "--decode-on cpu", "--backend cpu"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	// A budget that fits one bucket beside decode: only 32 and 512 are planned.
	_, _, b2 := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim, CompileBudget: 20})
	if s := b2.Stats(); !slices.Equal(s.Buckets, []int{32, 512}) || s.Planned != 17 {
		t.Errorf("budget 20: buckets %v, %d programs; want [32 512], 17", s.Buckets, s.Planned)
	}
}

// TestF32HasNoPrograms: an f32 bundle keeps fp32 weights for the CPU and carries no ANE
// programs (the ANE computes in fp16 and is never handed fp32 weights); the ANE backends say so
// and name the command that packs an f16 bundle.
func TestF32HasNoPrograms(t *testing.T) {
	m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny-untied", "f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := len(m.Manifest().Programs); n != 0 || m.Manifest().ANE != nil {
		t.Errorf("an f32 bundle lists %d programs and ANE options %+v", n, m.Manifest().ANE)
	}
	_, err = New(m, Options{Eval: EvalSim})
	if !errors.Is(err, ErrNoPrograms) || !strings.Contains(err.Error(), "--dtype f16") {
		t.Errorf("sim backend on an f32 bundle: %v; want ErrNoPrograms naming --dtype f16", err)
	}
}

// TestDecodeOnCPU: prefill on the programs, decode on the CPU. The decode steps match the CPU
// backend within simTol, and decoding loads no program: the 100-token prompt used the 128
// bucket's layer programs, and its one row of logits, like every single-token product when
// decoding on the CPU, was computed on the CPU.
func TestDecodeOnCPU(t *testing.T) {
	m, cb, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim, DecodeOn: DecodeCPU})
	vocab := m.Config.VocabSize
	ids := prompt(t, 100)
	cs, _ := cb.NewState(120)
	ss, _ := b.NewState(120)
	want, got := make([]float32, vocab), make([]float32, vocab)
	if err := cs.Forward(ids, 0, want); err != nil {
		t.Fatal(err)
	}
	if err := ss.Forward(ids, 0, got); err != nil {
		t.Fatal(err)
	}
	loaded := b.Stats().Loaded
	worst := maxDiff(got, want)
	for pos := len(ids); pos < len(ids)+5; pos++ {
		id := []int{argmax(want)}
		if err := cs.Forward(id, pos, want); err != nil {
			t.Fatal(err)
		}
		if err := ss.Forward(id, pos, got); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, maxDiff(got, want))
	}
	if worst > simTol {
		t.Errorf("largest logit difference from the CPU backend %.2e; want <= %g", worst, simTol)
	}
	if loaded != 2*3 || b.Stats().Loaded != loaded {
		t.Errorf("programs loaded: %d after prefill, %d after decode; want 6 and 6", loaded, b.Stats().Loaded)
	}
	// Decoding on the CPU allocates nothing.
	pos, tok := len(ids)+5, []int{42}
	if a := testing.AllocsPerRun(5, func() {
		if err := ss.Forward(tok, pos, got); err != nil {
			t.Fatal(err)
		}
		pos++
	}); a != 0 {
		t.Errorf("a CPU decode step allocates %.1f times", a)
	}
	t.Logf("largest logit difference from the CPU backend: %.2e (whole vocabulary)", worst)
}

// TestConcurrentStates decodes two sequences at once on one backend (as anerun serve does) and
// expects the logits each gets alone.
func TestConcurrentStates(t *testing.T) {
	m, _, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	vocab := m.Config.VocabSize
	run := func(ids []int) []float32 {
		st, err := b.NewState(len(ids) + 3)
		if err != nil {
			t.Error(err)
			return nil
		}
		defer st.Close()
		logits := make([]float32, vocab)
		if err := st.Forward(ids, 0, logits); err != nil {
			t.Error(err)
		}
		for pos := len(ids); pos < len(ids)+3; pos++ {
			if err := st.Forward([]int{argmax(logits)}, pos, logits); err != nil {
				t.Error(err)
			}
		}
		return logits
	}
	a, c := prompt(t, 40), prompt(t, 9)
	wantA, wantC := run(a), run(c)
	var gotA, gotC []float32
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); gotA = run(a) }()
	go func() { defer wg.Done(); gotC = run(c) }()
	wg.Wait()
	if !slices.Equal(gotA, wantA) || !slices.Equal(gotC, wantC) {
		t.Error("logits of concurrent sequences differ from their logits alone")
	}
}

// TestForwardErrors checks the State's argument checks.
func TestForwardErrors(t *testing.T) {
	m, _, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	vocab := m.Config.VocabSize
	if _, err := b.NewState(m.Config.MaxPositionEmbeddings + 1); err == nil {
		t.Error("a state longer than max_position_embeddings was allocated")
	}
	st, err := b.NewState(16)
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, vocab)
	for _, tc := range []struct {
		name   string
		tokens []int
		pos    int
		logits []float32
	}{
		{"no tokens", nil, 0, logits},
		{"past the context", []int{1, 2}, 15, logits},
		{"negative position", []int{1}, -1, logits},
		{"token past the vocabulary", []int{vocab}, 0, logits},
		{"negative token", []int{-1}, 0, logits},
		{"partial logits row", []int{1}, 0, logits[:vocab-1]},
		{"more rows than tokens", []int{1}, 0, make([]float32, 2*vocab)},
	} {
		if err := st.Forward(tc.tokens, tc.pos, tc.logits); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	st.Close()
	if err := st.Forward([]int{1}, 0, logits); err == nil {
		t.Error("Forward on a closed state: no error")
	}
	for _, o := range []Options{{Eval: "gpu"}, {DecodeOn: "gpu"}, {Threads: -1}} {
		if _, err := New(m, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func maxDiff(a, b []float32) float64 {
	worst := 0.0
	for i := range a {
		worst = max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}

// TestCheck: with Check, every program's first evaluation is compared with the simulator. The
// sim agrees with itself, so a run gives the same logits as without Check; a program that
// computes something else (here layer 1's QKV program standing in for layer 0's) is caught
// and named.
func TestCheck(t *testing.T) {
	m, _, plain := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim})
	checked, err := New(m, Options{Eval: EvalSim, Check: true, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer checked.Close()
	vocab := m.Config.VocabSize
	ids := prompt(t, 40)
	var got [2][]float32
	for i, b := range []*Backend{plain, checked} {
		st, _ := b.NewState(41)
		got[i] = make([]float32, vocab)
		if err := st.Forward(ids, 0, got[i]); err != nil {
			t.Fatal(err)
		}
		if err := st.Forward([]int{7}, len(ids), got[i]); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	if !slices.Equal(got[0], got[1]) {
		t.Error("Check changed the logits")
	}

	ps, err := readPrograms(m)
	if err != nil {
		t.Fatal(err)
	}
	load := func(layer int) dispatch.Loaded {
		for _, k := range ps.programs {
			if k.Kind == "attn_qkv" && k.Layer == layer && k.Seq == 32 {
				w := map[string][]byte{}
				for _, kw := range k.Weights {
					s, _ := m.Bundle().Section(kw.Section)
					w[kw.Path], _ = m.Bundle().Bytes(s)
				}
				l, err := (&dispatch.SimBackend{}).Load(&k, ps.texts[k.MIL][k.MILOffset:k.MILOffset+k.MILSize], w)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
		}
		t.Fatalf("no attn_qkv program for layer %d", layer)
		return nil
	}
	wrong := &checkedLoaded{name: "layers.0.attn_qkv.s32", eval: load(1), ref: load(0), seq: 32}
	defer wrong.Close()
	in := make([]uint16, m.Config.HiddenSize*32)
	for i := range in {
		in[i] = half.F32ToF16Scalar(float32(i%13)/13 - 0.5)
	}
	out := make([]uint16, ps.programs[0].Outputs[0].Shape[1]*32)
	err = wrong.Eval([][]uint16{in}, [][]uint16{out}, 3)
	if err == nil || !strings.Contains(err.Error(), "layers.0.attn_qkv.s32") || !strings.Contains(err.Error(), "differs from the simulator") {
		t.Errorf("error %v; want one naming the program", err)
	}
}

// TestDecodeOnProgramsAllocates nothing: a decode step through the S=32 programs (one live
// column, the sim evaluating) allocates nothing once its programs are loaded, as runtime.State
// requires.
func TestDecodeOnProgramsAllocatesNothing(t *testing.T) {
	m, _, b := openBoth(t, "qwen2-tiny", "f16", Options{Eval: EvalSim, DecodeOn: DecodeANE})
	vocab := m.Config.VocabSize
	ids := prompt(t, 20)
	s, err := b.NewState(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits := make([]float32, vocab)
	if err := s.Forward(ids, 0, logits); err != nil {
		t.Fatal(err)
	}
	pos, tok := len(ids), []int{42}
	if err := s.Forward(tok, pos, logits); err != nil { // warm: loads nothing new, sizes buffers
		t.Fatal(err)
	}
	pos++
	if a := testing.AllocsPerRun(3, func() {
		if err := s.Forward(tok, pos, logits); err != nil {
			t.Fatal(err)
		}
		pos++
	}); a != 0 {
		t.Errorf("a decode step on the programs allocates %.1f times", a)
	}
}
