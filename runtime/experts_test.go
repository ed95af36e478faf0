package runtime

import (
	"math"
	"slices"
	"testing"

	"github.com/anepack/anepack/arch"
)

// TestRouterChooses checks the routing of Hugging Face's Qwen3-MoE router on hand-computed
// logits: the softmax over every expert, the K most probable (the lower index first among equal
// ones), renormalised or not, and the by-expert order the backends run the experts in.
func TestRouterChooses(t *testing.T) {
	for _, norm := range []bool{false, true} {
		d := &Decoder{cfg: &arch.Config{NumExperts: 5, NumExpertsPerTok: 2, NormTopKProb: norm}}
		rt := d.newRouter(3)
		rt.routes.N = 3
		copy(rt.logits, []float32{
			0, 1, 2, 3, 4, // token 0: experts 4, 3
			1, 3, 3, 0, -1, // token 1: a tie: 1 before 2
			5, float32(math.Inf(-1)), 0, 0, 5, // token 2: 0 and 4, an expert of probability 0
		})
		want := make([]float32, 15)
		copy(want, rt.logits)
		for t := 0; t < 3; t++ {
			rt.choose(t)
		}
		if got := rt.routes.Expert; !slices.Equal(got, []int32{4, 3, 1, 2, 0, 4}) {
			t.Fatalf("norm %v: experts %v; want [4 3 1 2 0 4]", norm, got)
		}
		for tok := 0; tok < 3; tok++ {
			var sum float64
			p := make([]float64, 5)
			for i, v := range want[tok*5 : tok*5+5] {
				p[i] = math.Exp(float64(v))
				sum += p[i]
			}
			w0, w1 := p[rt.routes.Expert[2*tok]]/sum, p[rt.routes.Expert[2*tok+1]]/sum
			if norm {
				w0, w1 = w0/(w0+w1), w1/(w0+w1)
			}
			for j, w := range []float64{w0, w1} {
				if got := float64(rt.routes.Weight[2*tok+j]); math.Abs(got-w) > 1e-6 {
					t.Errorf("norm %v: token %d choice %d: weight %v; want %v", norm, tok, j, got, w)
				}
			}
		}
		rt.routes.Sort(rt.next)
		// Expert 0: token 2's first choice (index 4); 1: index 2; 2: index 3; 3: index 1;
		// 4: tokens 0 and 2 (indices 0, 5).
		if !slices.Equal(rt.routes.Start, []int32{0, 1, 2, 3, 4, 6}) || !slices.Equal(rt.routes.Order, []int32{4, 2, 3, 1, 0, 5}) {
			t.Errorf("by expert: start %v order %v", rt.routes.Start, rt.routes.Order)
		}
	}
	// NaN logits give NaN weights, not a crash.
	d := &Decoder{cfg: &arch.Config{NumExperts: 3, NumExpertsPerTok: 2}}
	rt := d.newRouter(1)
	copy(rt.logits, []float32{float32(math.NaN()), 1, 2})
	rt.choose(0)
	if e := rt.routes.Expert; e[0] == e[1] || e[0] < 0 || e[1] < 0 || e[0] > 2 || e[1] > 2 {
		t.Errorf("NaN logits: experts %v", e)
	}
}
