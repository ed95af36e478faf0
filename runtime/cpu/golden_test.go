package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
	"github.com/anepack/anepack/runtime/testmodel"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testmodel.Cleanup()
	os.Exit(code)
}

// Tolerances of golden/README.md "How to compare".
const (
	logitTol = 1e-3         // on every compared logit
	gapTol   = 2 * logitTol // argmax must match where HF's top-1/top-2 gap exceeds this
	// f16CacheTol is logitTol for an fp16 KV cache (TestGoldenTeacherForcingF16Cache).
	f16CacheTol = 5e-3
)

// open returns the golden model's bundle packed with dtype, a 2-thread backend and its model.
func open(t *testing.T, name, dtype string) (*runtime.Model, *Backend) {
	return openWith(t, name, dtype, Options{Threads: 2})
}

// openWith is open with the backend's options.
func openWith(t *testing.T, name, dtype string, opts Options) (*runtime.Model, *Backend) {
	t.Helper()
	m, err := runtime.Open(testmodel.Bundle(t, name, dtype))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(m, opts)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Close()
		m.Close()
	})
	return m, b
}

// checkTop compares logits (one row) with HF's top-k list: each listed id's logit within
// tol, and our own k largest values within tol of HF's (so a token HF did not rank cannot
// sneak in above them). It returns the largest difference seen.
func checkTop(logits []float32, want [][2]float64, tol float64) (float64, error) {
	worst := 0.0
	for _, p := range want {
		id, w := int(p[0]), p[1]
		d := math.Abs(float64(logits[id]) - w)
		worst = max(worst, d)
		if d > tol {
			return worst, fmt.Errorf("logit of id %d is %.6f; HF has %.6f (diff %.2e)", id, logits[id], w, d)
		}
	}
	got := topK(logits, len(want))
	for i, p := range want {
		d := math.Abs(float64(logits[got[i]]) - p[1])
		worst = max(worst, d)
		if d > tol {
			return worst, fmt.Errorf("rank %d: our id %d has %.6f; HF's rank %d is id %d with %.6f", i, got[i], logits[got[i]], i, int(p[0]), p[1])
		}
	}
	return worst, nil
}

// topK returns the ids of the k largest logits, largest first.
func topK(logits []float32, k int) []int {
	ids := make([]int, 0, k+1)
	for id, v := range logits {
		if len(ids) == k && v <= logits[ids[k-1]] {
			continue
		}
		i, _ := slices.BinarySearchFunc(ids, v, func(a int, v float32) int {
			if logits[a] > v {
				return -1
			}
			return 1
		})
		ids = slices.Insert(ids, i, id)
		if len(ids) > k {
			ids = ids[:k]
		}
	}
	return ids
}

func argmax(logits []float32) int {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return best
}

// wideGaps reports whether every step's HF top-1/top-2 gap exceeds gapTol, so greedy decoding
// cannot legitimately flip anywhere.
func wideGaps(c testmodel.Case) bool {
	for _, s := range c.StepsTop8 {
		if s[0][1]-s[1][1] <= gapTol {
			return false
		}
	}
	return true
}

// TestGoldenTeacherForcing feeds each golden prompt (batched prefill) and then HF's generated ids
// one at a time (decode with the KV cache), comparing the logits at every prompt position HF
// recorded and at every step, for both golden models and both storage types.
func TestGoldenTeacherForcing(t *testing.T) {
	for _, name := range testmodel.Models {
		for _, dtype := range []string{"f16", "f32"} {
			t.Run(name+"/"+dtype, func(t *testing.T) { teacherForcing(t, name, dtype, Options{Threads: 2}, logitTol) })
		}
	}
}

// TestGoldenTeacherForcingF16Cache is TestGoldenTeacherForcing (f16 weights) with an fp16 KV
// cache, within a tolerance for the cache's rounding: fp16 keeps 11 bits, so each cached
// value moves by up to 2^-12 of itself; the logits moved by up to 3.5e-3 (llama3-tiny).
//
// A mixture of experts is not continuous in its input: where a router's k-th and (k+1)-th
// probabilities are closer than the rounding moves them, the token takes another expert. On
// qwen3moe-tiny's 700-token prompt 4 of the 1400 routings are within 1e-4 of a tie (27 within
// 1e-3), and the fp16 cache moved one step's logits by 2.3e-2; no tolerance for rounding
// bounds that, so that prompt is left out for the models with experts (the f32 cache matches
// Hugging Face on it within 4e-6: TestGoldenTeacherForcing).
func TestGoldenTeacherForcingF16Cache(t *testing.T) {
	for _, name := range testmodel.Models {
		t.Run(name, func(t *testing.T) {
			keep := func(testmodel.Case) bool { return true }
			if hasExperts(t, name) {
				keep = func(c testmodel.Case) bool { return len(c.PromptIDs) < 700 }
			}
			teacherForcingCases(t, name, "f16", Options{Threads: 2, Cache: runtime.CacheF16}, f16CacheTol, keep)
		})
	}
}

// hasExperts reports whether golden model name has sparse layers (a mixture of experts).
func hasExperts(t *testing.T, name string) bool {
	m, _ := open(t, name, "f16")
	return m.Config.NumExperts > 0
}

// TestGoldenTeacherForcingAMX is TestGoldenTeacherForcing with every fp16 prefill product on
// the AMX path (kernels.MatMulF16AMX: on a CPU without AMX its Go twin), whatever the number of
// tokens: the split into bfloat16 parts must keep HF's logits.
func TestGoldenTeacherForcingAMX(t *testing.T) {
	// One model per kind of layer: biased QKV and SwiGLU, GPT-2's plain GELU MLP with biases
	// everywhere, Gemma's GeGLU, Qwen3.5's Gated DeltaNet, Qwen3-MoE's experts.
	for _, name := range []string{"qwen2-tiny", "gpt2-tiny", "gemma3-tiny", "qwen3.5-tiny", "qwen3moe-tiny"} {
		t.Run(name, func(t *testing.T) {
			teacherForcing(t, name, "f16", Options{Threads: 2, amxFor: func(n int) bool { return n > 1 }}, logitTol)
		})
	}
}

// teacherForcing runs TestGoldenTeacherForcing's checks on one model and storage type, with
// tol in place of logitTol (and 2·tol in place of gapTol).
func teacherForcing(t *testing.T, name, dtype string, opts Options, tol float64) {
	t.Helper()
	teacherForcingCases(t, name, dtype, opts, tol, func(testmodel.Case) bool { return true })
}

// teacherForcingCases is teacherForcing on the golden cases keep accepts.
func teacherForcingCases(t *testing.T, name, dtype string, opts Options, tol float64, keep func(testmodel.Case) bool) {
	t.Helper()
	g := testmodel.LoadGolden(t, name)
	m, b := openWith(t, name, dtype, opts)
	vocab := m.Config.VocabSize
	worst := 0.0
	ran := 0
	for _, c := range g.Cases {
		if !keep(c) {
			continue
		}
		ran++
		st, err := b.NewState(len(c.PromptIDs) + len(c.GeneratedIDs))
		if err != nil {
			t.Fatal(err)
		}
		// Prefill in one call, asking for the logits of the positions HF recorded.
		np := len(c.PrefillTop4)
		logits := make([]float32, np*vocab)
		if err := st.Forward(c.PromptIDs, 0, logits); err != nil {
			t.Fatal(err)
		}
		first := len(c.PromptIDs) - np
		for j, want := range c.PrefillTop4 {
			d, err := checkTop(logits[j*vocab:(j+1)*vocab], want, tol)
			worst = max(worst, d)
			if err != nil {
				t.Errorf("%s: prefill position %d: %v", c.Name, first+j, err)
			}
		}
		// Decode: step j's logits come from the last prompt token, then from generated id j-1.
		step := slices.Clone(logits[(np-1)*vocab:])
		pos := len(c.PromptIDs)
		for j, want := range c.StepsTop8 {
			if j > 0 {
				if err := st.Forward(c.GeneratedIDs[j-1:j], pos, step); err != nil {
					t.Fatal(err)
				}
				pos++
			}
			d, err := checkTop(step, want, tol)
			worst = max(worst, d)
			if err != nil {
				t.Errorf("%s: step %d: %v", c.Name, j, err)
			}
			if gap := want[0][1] - want[1][1]; gap > 2*tol {
				if got := argmax(step); got != c.GeneratedIDs[j] {
					t.Errorf("%s: step %d: argmax %d, HF chose %d (gap %.4f)", c.Name, j, got, c.GeneratedIDs[j], gap)
				}
			}
		}
		st.Close()
	}
	if ran == 0 {
		t.Fatalf("no case of %s kept; the test would check nothing", name)
	}
	t.Logf("largest logit difference from HF: %.2e", worst)
}

// TestGoldenGreedy generates greedily from each golden prompt whose every step has a wide top-1
// gap and expects HF's ids exactly.
func TestGoldenGreedy(t *testing.T) {
	for _, name := range testmodel.Models {
		g := testmodel.LoadGolden(t, name)
		for _, dtype := range []string{"f16", "f32"} {
			t.Run(name+"/"+dtype, func(t *testing.T) {
				m, b := open(t, name, dtype)
				logits := make([]float32, m.Config.VocabSize)
				ran := 0
				for _, c := range g.Cases {
					if !wideGaps(c) {
						continue
					}
					ran++
					st, err := b.NewState(len(c.PromptIDs) + len(c.GeneratedIDs))
					if err != nil {
						t.Fatal(err)
					}
					if err := st.Forward(c.PromptIDs, 0, logits); err != nil {
						t.Fatal(err)
					}
					var got []int
					for pos := len(c.PromptIDs); len(got) < len(c.GeneratedIDs); pos++ {
						id := argmax(logits)
						got = append(got, id)
						if err := st.Forward([]int{id}, pos, logits); err != nil {
							t.Fatal(err)
						}
					}
					if !slices.Equal(got, c.GeneratedIDs) {
						t.Errorf("%s: greedy ids\n got %v\nwant %v", c.Name, got, c.GeneratedIDs)
					}
					st.Close()
				}
				if ran == 0 {
					t.Fatalf("no case of %s has only wide gaps; the test would check nothing", name)
				}
				t.Logf("%d case(s) with wide gaps matched", ran)
			})
		}
	}
}

// TestChunkedPrefill runs the longest golden prompts through a backend whose batch is 7 tokens
// on one thread, so the prompt is split into many chunks at odd boundaries, and expects HF's
// logits at the recorded positions all the same.
func TestChunkedPrefill(t *testing.T) {
	for _, name := range testmodel.Models {
		g := testmodel.LoadGolden(t, name)
		m, _ := open(t, name, "f32")
		b, err := New(m, Options{Threads: 1, Batch: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		vocab := m.Config.VocabSize
		for _, c := range g.Cases {
			if len(c.PromptIDs) < 100 {
				continue
			}
			st, err := b.NewState(len(c.PromptIDs))
			if err != nil {
				t.Fatal(err)
			}
			np := min(len(c.PrefillTop4), 10)
			logits := make([]float32, np*vocab)
			if err := st.Forward(c.PromptIDs, 0, logits); err != nil {
				t.Fatal(err)
			}
			for j, want := range c.PrefillTop4[len(c.PrefillTop4)-np:] {
				if _, err := checkTop(logits[j*vocab:(j+1)*vocab], want, logitTol); err != nil {
					t.Errorf("%s/%s: position %d from the end: %v", name, c.Name, np-j, err)
				}
			}
			st.Close()
		}
	}
}

// TestForwardErrors checks the State's argument checks and that neither a decode step nor a
// prefill allocates.
func TestForwardErrors(t *testing.T) {
	m, b := open(t, "qwen2-tiny", "f16")
	vocab := m.Config.VocabSize
	if _, err := b.NewState(m.Config.MaxPositionEmbeddings + 1); err == nil {
		t.Error("a state longer than max_position_embeddings was allocated")
	}
	st, err := b.NewState(16)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
	if err := st.Forward([]int{1, 2, 3}, 0, logits); err != nil {
		t.Fatal(err)
	}
	pos := 3
	tok := []int{42}
	if a := testing.AllocsPerRun(10, func() {
		if err := st.Forward(tok, pos, logits); err != nil {
			t.Fatal(err)
		}
		pos++
	}); a != 0 {
		t.Errorf("a decode step allocates %.1f times", a)
	}
	// A prefill long enough to split its row-wise work over the pool's 2 threads allocates
	// nothing either.
	long, err := b.NewState(64)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = i + 1
	}
	if a := testing.AllocsPerRun(5, func() {
		if err := long.Forward(prompt, 0, logits); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("a 32-token prefill allocates %.1f times", a)
	}
}

// TestLearnedPositionsLimit: GPT-2 has n_positions learned positions; a prompt past them is a
// clear error naming the limit, never a wrap-around.
func TestLearnedPositionsLimit(t *testing.T) {
	m, b := open(t, "gpt2-tiny", "f16")
	s, err := runtime.NewSession(m, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Context() != 1024 {
		t.Errorf("default context %d; want n_positions 1024", s.Context())
	}
	_, err = s.Prefill(context.Background(), make([]int, 1025))
	var ce *runtime.ContextError
	if !errors.As(err, &ce) || ce.Max != 1024 || !strings.Contains(err.Error(), "1024") {
		t.Errorf("1025-token prompt: %v; want a ContextError naming 1024", err)
	}
	if _, err := runtime.NewSession(m, b, 2048); err == nil {
		t.Error("a 2048-token context was allowed for a 1024-position model")
	}
}

// TestSlidingWindowResume: a Gemma 3 sequence (sliding window 32, ring of window + 2 batches)
// can step back within the ring and continue with the same logits, and a session asks the
// state where it can resume (further back it recomputes from the start).
func TestSlidingWindowResume(t *testing.T) {
	m, _ := open(t, "gemma3-tiny", "f32")
	b, err := New(m, Options{Threads: 1, Batch: 8}) // ring capacity 32 + 16 = 48
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	vocab := m.Config.VocabSize
	ids := make([]int, 100)
	for i := range ids {
		ids[i] = (i*7919 + 13) % 1000
	}
	st, _ := b.NewState(200)
	defer st.Close()
	want := make([]float32, vocab)
	if err := st.Forward(ids, 0, want); err != nil {
		t.Fatal(err)
	}
	r := st.(runtime.Resumer)
	if got := r.ResumeAt(95); got != 95 {
		t.Errorf("ResumeAt(95) = %d after 100 positions; the ring still holds its window", got)
	}
	if got := r.ResumeAt(60); got != 0 {
		t.Errorf("ResumeAt(60) = %d; the ring no longer holds positions 29..59", got)
	}
	if err := st.Forward(ids[60:], 60, want); err == nil {
		t.Error("Forward from position 60 was accepted though the window before it is gone")
	}
	got := make([]float32, vocab)
	if err := st.Forward(ids[95:], 95, got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("logit %d after stepping back to 95: %v; first run %v", i, got[i], want[i])
		}
	}
	// Through a session: a prompt sharing only 60 tokens recomputes from 0, and is right.
	s, err := runtime.NewSession(m, b, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Prefill(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
	other := append(append([]int(nil), ids[:60]...), 5, 6, 7)
	reused, err := s.Prefill(context.Background(), other)
	if err != nil || reused != 0 {
		t.Errorf("prefill sharing 60 tokens: reused %d, %v; want 0 (recomputed)", reused, err)
	}
	fresh, _ := b.NewState(200)
	defer fresh.Close()
	if err := fresh.Forward(other, 0, want); err != nil {
		t.Fatal(err)
	}
	for i, v := range s.Logits() {
		if v != want[i] {
			t.Fatalf("logit %d after recomputing: %v; a fresh state gives %v", i, v, want[i])
		}
	}
}

// TestBatchMatchesAlone runs every golden model's prompts through one runtime.Batch, joining and
// leaving at different passes with prompt chunks beside decode steps, and requires the logits
// each sequence gets alone and exactly the same greedy tokens. The f16 products of a batch and
// of one token round differently (2.4e-6 at most measured); the Gated DeltaNet amplifies such
// differences about a hundredfold (its heads' outputs nearly cancel before a norm), hence
// Qwen3.5's wider bound. In int8 bundles a sequence decoding alone multiplies its one token's
// activations quantized to int16 per block of 32 (W8A16, relative step 1/32258), while a pass of
// two or more tokens (a prompt chunk, or several sequences' decode steps) multiplies the float32
// activations (kernels.Q8FloatActs): the two differ by that rounding, about 200 times float32's,
// and measured up to 4.2e-4 (8.2e-3 for Qwen3.5), hence the int8 bounds. The greedy tokens must
// still be the same.
func TestBatchMatchesAlone(t *testing.T) {
	for _, name := range testmodel.Models {
		for _, dtype := range []string{"f16", "int8"} {
			t.Run(name+"/"+dtype, func(t *testing.T) {
				m, b := open(t, name, dtype)
				tol := 1e-5
				if name == "qwen3.5-tiny" {
					tol = 1e-3
				}
				if dtype == "int8" {
					tol *= 200 // the int16 activations of decode against the float ones of a batch
					if name == "qwen3.5-tiny" {
						tol = 4e-2
					}
				}
				worst, err := testmodel.CheckBatch(m, b, testmodel.LoadGolden(t, name), tol)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("largest difference from the same sequence alone: %.2e", worst)
			})
		}
	}
}

// TestStateBytes checks what a state reports holding against the model's shape: a full-attention
// layer caches every position of the context, a sliding layer its window plus two passes (a
// ring), and Gemma 3's cache at a long context is therefore a fraction of a full one.
func TestStateBytes(t *testing.T) {
	m, b := open(t, "gemma3-tiny", "f16")
	c := m.Config
	const ctx = 4096
	s, err := runtime.NewSession(m, b, ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want, full int64
	for l := 0; l < c.NumHiddenLayers; l++ {
		positions := ctx
		if c.Sliding(l) {
			positions = min(ctx, c.SlidingWindow+2*DefaultBatch)
		}
		want += int64(positions) * int64(c.KVDim()) * 2 * 4
		full += int64(ctx) * int64(c.KVDim()) * 2 * 4
	}
	if got := s.StateBytes(); got != want || got >= full {
		t.Errorf("gemma3-tiny at %d tokens holds %d bytes; want %d (a full cache: %d)", ctx, got, want, full)
	}
}

// TestOptionsErrors: bad options are refused with the field and what was expected, and the
// backend reports whether prefill runs on AMX as --amx asks (never with AMXOff, and never with
// AMXAuto beyond AMXAutoThreads threads).
func TestOptionsErrors(t *testing.T) {
	m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny", "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Threads: -1}, "threads is -1; expected 0 (all cores) or a positive number"},
		{Options{Batch: -2}, "batch is -2; expected 0 (default) or a positive number"},
		{Options{AMX: AMXOff + 1}, "AMX mode is 3; expected AMXAuto, AMXOn or AMXOff"},
		{Options{Cache: runtime.CacheF16 + 1}, "KV cache type is 2; expected CacheF32 or CacheF16"},
	} {
		if b, err := New(m, tc.opts); err == nil || err.Error() != tc.want {
			if b != nil {
				b.Close()
			}
			t.Errorf("%+v: error %v, want %q", tc.opts, err, tc.want)
		}
	}
	for _, tc := range []struct {
		opts Options
		may  bool // AMX possible (on a CPU with it)
	}{
		{Options{Threads: 1, AMX: AMXOff}, false},
		{Options{Threads: AMXAutoThreads + 1}, false},
		{Options{Threads: 1}, true},
		{Options{Threads: AMXAutoThreads + 1, AMX: AMXOn}, true},
	} {
		b, err := New(m, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := b.AMXPrefill(), tc.may && kernels.UseAMX(DefaultBatch); got != want {
			t.Errorf("%+v: AMXPrefill %v, want %v", tc.opts, got, want)
		}
		b.Close()
	}
}
