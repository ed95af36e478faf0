package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestMixedFormatsInOneJob runs fused groups whose members are stored in different formats (a
// bundle's manifest gives each tensor its own dtype and the runtime accepts any mix): Q in q8, K
// in q4, V in f16, and a gated MLP with gate q4 and up q8. One job must quantize the input
// once per form (int16 for q8, int8 for q4), use the float kernels for f16, and give every
// member the product it gives alone; with AMX (its Go twin here) the f16 and q8 members share
// one split of the input into bfloat16 parts.
func TestMixedFormatsInOneJob(t *testing.T) {
	pool := kernels.NewPool(2)
	defer pool.Close()
	proj := map[string]*Projections{}
	for _, dt := range []string{"f16", "int8", "int4"} {
		m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny", dt))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if proj[dt], err = NewProjections(m, pool); err != nil {
			t.Fatal(err)
		}
	}
	p := proj["int8"]
	qkv, mlp := groupIndex(t, p, arch.GroupQKV), groupIndex(t, p, arch.GroupMLP)
	mixed := *p
	mixed.groups = [][]group{append([]group(nil), p.groups[0]...)}
	g := &mixed.groups[0][qkv]
	g.w = []*weight{proj["int8"].groups[0][qkv].w[0], proj["int4"].groups[0][qkv].w[1], proj["f16"].groups[0][qkv].w[2]}
	g = &mixed.groups[0][mlp]
	if !g.Gated() {
		t.Fatalf("qwen2-tiny's MLP is not gated: %+v", g.Group)
	}
	g.w = []*weight{proj["int4"].groups[0][mlp].w[0], proj["int8"].groups[0][mlp].w[1], proj["int8"].groups[0][mlp].w[2]}

	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n   int
		amx bool
	}{{1, false}, {7, false}, {7, true}} {
		n := c.n
		mixed.amxFor = nil
		if c.amx {
			mixed.amxFor = func(n int) bool { return n > 1 }
		}
		pr, err := mixed.NewProjector(n)
		if err != nil {
			t.Fatal(err)
		}
		G := &mixed.groups[0][qkv]
		x := randVec(r, n*G.w[0].Cols)
		y := make([]float32, n*G.Out)
		if err := pr.Group(0, qkv, x, n, y); err != nil {
			t.Fatal(err)
		}
		col := 0
		for i, w := range G.w {
			want := alone(w, x, n, G.b[i])
			for tk := 0; tk < n; tk++ {
				closeTo(t, fmt.Sprintf("%s, AMX %v", w.DType, c.amx), y[tk*G.Out+col:tk*G.Out+col+w.Rows], want[tk*w.Rows:(tk+1)*w.Rows])
			}
			col += w.Rows
		}

		// The gated MLP: down(act(gate·x + gb) * (up·x + ub)) with each member alone.
		G = &mixed.groups[0][mlp]
		y = make([]float32, n*G.Out)
		if err := pr.Group(0, mlp, x, n, y); err != nil {
			t.Fatal(err)
		}
		gate, up := alone(G.w[0], x, n, G.b[0]), alone(G.w[1], x, n, G.b[1])
		mixed.gated(gate, gate, up)
		closeTo(t, fmt.Sprintf("gated MLP, AMX %v", c.amx), y, alone(G.w[2], gate, n, G.b[2]))
	}
}

// TestAMXPrefillWeights: a backend reports prefill on AMX only where the bundle has
// projections the AMX products take (fp16, q8), not for an int4 bundle (all q4).
func TestAMXPrefillWeights(t *testing.T) {
	for _, c := range []struct {
		dtype string
		want  bool
	}{{"f16", true}, {"int8", true}, {"int4", false}} {
		_, b := openWith(t, "qwen2-tiny", c.dtype, Options{Threads: 1, amxFor: func(int) bool { return true }})
		if got := b.AMXPrefill(); got != c.want {
			t.Errorf("%s bundle: AMXPrefill %v, want %v", c.dtype, got, c.want)
		}
	}
}

// TestQuantizedDecodeAllocatesNothing: a decode step of an int8 bundle (q8 layers, int16
// activations) and of an int4 one (q4 layers, int8 activations, q8 head) allocates nothing.
func TestQuantizedDecodeAllocatesNothing(t *testing.T) {
	for _, dt := range []string{"int8", "int4"} {
		m, b := open(t, "qwen2-tiny", dt)
		st, err := b.NewState(16)
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, m.Config.VocabSize)
		if err := st.Forward([]int{1, 2, 3}, 0, logits); err != nil {
			t.Fatal(err)
		}
		pos, tok := 3, []int{42}
		if a := testing.AllocsPerRun(5, func() {
			if err := st.Forward(tok, pos, logits); err != nil {
				t.Fatal(err)
			}
			pos++
		}); a != 0 {
			t.Errorf("%s: a decode step allocates %.1f times", dt, a)
		}
		st.Close()
	}
}

// groupIndex returns the index of the group named name in layer 0.
func groupIndex(t *testing.T, p *Projections, name string) int {
	t.Helper()
	for i, g := range p.groups[0] {
		if g.Name == name {
			return i
		}
	}
	t.Fatalf("no group %s", name)
	return -1
}

// alone returns w·x + bias for n tokens through the weight's own float-input entry point
// (which quantizes x itself, in the form the weight's format reads).
func alone(w *weight, x []float32, n int, bias []float32) []float32 {
	y := make([]float32, n*w.Rows)
	w.mul(y, x, n, 0, w.Rows)
	for t := 0; t < n && bias != nil; t++ {
		kernels.Add(y[t*w.Rows:(t+1)*w.Rows], bias)
	}
	return y
}

// closeTo fails unless got matches want within float32 rounding of sums in another order.
func closeTo(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s: [%d] = %g, alone %g", what, i, got[i], want[i])
		}
	}
}

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// TestAMXLargeInput runs a prompt long enough that the down projection's split input (6 bytes
// a value) no longer fits the L2 budget of kernels.AMXItemRows, every product on the AMX path
// (its Go twin here): the down projection is then one work item per thread, computed in place,
// while the gated gate/up job keeps items bounded by its scratch. Both must give the float
// kernels' products.
func TestAMXLargeInput(t *testing.T) {
	pool := kernels.NewPool(1)
	defer pool.Close()
	m, err := runtime.Open(testmodel.Bundle(t, "qwen2-tiny", "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p, err := NewProjections(m, pool)
	if err != nil {
		t.Fatal(err)
	}
	p.amxFor = func(n int) bool { return n > 1 }
	mlp := groupIndex(t, p, arch.GroupMLP)
	G := &p.groups[0][mlp]
	gate, up, down := G.w[0], G.w[1], G.w[2]
	const n = 1100 // 6 * 1100 * 160 bytes > 1 MiB
	pr, err := p.NewProjector(n)
	if err != nil {
		t.Fatal(err)
	}
	r := pr.(*projector).run

	// The grain each job gets: gate/up from scratch-bounded quarters, down in one item.
	x := randVec(rand.New(rand.NewPCG(3, 4)), n*down.Cols)
	r.add(down, nil, make([]float32, n*down.Rows), down.Rows, 0)
	r.x, r.n = x, n
	r.quantizeInput()
	if !r.in.hasAMX() || !r.inPlace() {
		t.Fatalf("down projection of %d tokens: AMX %v, in place %v; want both", n, r.in.hasAMX(), r.inPlace())
	}
	if g := r.grain(down.Rows); g != down.Rows {
		t.Errorf("down projection: %d rows a work item, want all %d on one thread", g, down.Rows)
	}
	r.reset()
	r.gated = p.gated
	if r.inPlace() {
		t.Error("a gated job counts as in place; its results go through scratch")
	}
	r.reset()

	h := randVec(rand.New(rand.NewPCG(5, 6)), n*gate.Cols)
	y := make([]float32, n*G.Out)
	if err := pr.Group(0, mlp, h, n, y); err != nil {
		t.Fatal(err)
	}
	g, u := alone(gate, h, n, G.b[0]), alone(up, h, n, G.b[1])
	p.gated(g, g, u)
	closeTo(t, "gated MLP on AMX", y, alone(down, g, n, G.b[2]))
}

// TestInt8PrefillAMX prefills the golden prompts through int8 bundles with every batched q8
// product on AMX (kernels.MatMulQ8AMX; its Go twin here) and without: where the float-activation
// kernel runs batches (kernels.Q8FloatActs), both are the float32 product of the dequantized
// weights up to summation order, so the logits of the last positions must agree to float32
// rounding; elsewhere (a -tags noasm build) batches take int16 activations, whose rounding
// TestBatchMatchesAlone bounds at 200 times that.
func TestInt8PrefillAMX(t *testing.T) {
	tol := 1e-5
	if !kernels.Q8FloatActs(2) {
		tol *= 200
	}
	for _, name := range []string{"qwen2-tiny", "gpt2-tiny", "gemma3-tiny"} {
		t.Run(name, func(t *testing.T) {
			m, amx := openWith(t, name, "int8", Options{Threads: 2, amxFor: func(n int) bool { return n > 1 }})
			_, plain := openWith(t, name, "int8", Options{Threads: 2, AMX: AMXOff})
			vocab, worst := m.Config.VocabSize, 0.0
			for _, c := range testmodel.LoadGolden(t, name).Cases {
				if len(c.PromptIDs) < 2 || len(c.PromptIDs) > 300 {
					continue // the twin of the tile kernel is slow; 300 tokens still take 3 batches
				}
				np := min(4, len(c.PromptIDs))
				var got [2][]float32
				for i, b := range []*Backend{amx, plain} {
					st, err := b.NewState(len(c.PromptIDs))
					if err != nil {
						t.Fatal(err)
					}
					got[i] = make([]float32, np*vocab)
					if err := st.Forward(c.PromptIDs, 0, got[i]); err != nil {
						t.Fatal(err)
					}
					st.Close()
				}
				for j, v := range got[0] {
					d := math.Abs(float64(v - got[1][j]))
					worst = max(worst, d)
					if !(d <= tol*(1+math.Abs(float64(got[1][j])))) {
						t.Fatalf("%s: logit %d of the last %d positions: %g on AMX, %g without", c.Name, j, np, v, got[1][j])
					}
				}
			}
			t.Logf("largest logit difference, AMX against the float kernel: %.2e", worst)
		})
	}
}
