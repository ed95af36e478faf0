package ane

import "math"

// rope holds the rotary tables cos and sin, [maxTokens][headDim], computed as Hugging Face's
// Qwen2RotaryEmbedding does in float32 (default rope type), filled on first use:
//
//	inv_freq[i] = 1 / theta^(2i/headDim)    angle = float32(pos) * inv_freq[i]
//
// The float32 angle matters at long positions (runtime/cpu/rope.go explains; this is the same
// computation, kept here because runtime/cpu does not export it).
type rope struct {
	headDim  int
	invFreq  []float32
	cos, sin []float32
	filled   int
}

func newRope(theta float64, headDim, maxTokens int) *rope {
	r := &rope{headDim: headDim, invFreq: make([]float32, headDim/2),
		cos: make([]float32, maxTokens*headDim), sin: make([]float32, maxTokens*headDim)}
	base := float32(theta)
	for i := range r.invFreq {
		e := float32(2*i) / float32(headDim)
		r.invFreq[i] = 1 / float32(math.Pow(float64(base), float64(e)))
	}
	return r
}

// upTo makes rows [0, n) available.
func (r *rope) upTo(n int) {
	d, h := r.headDim, r.headDim/2
	for p := r.filled; p < n; p++ {
		cos, sin := r.cos[p*d:(p+1)*d], r.sin[p*d:(p+1)*d]
		for i, f := range r.invFreq {
			a := float32(float32(p) * f)
			c, s := float32(math.Cos(float64(a))), float32(math.Sin(float64(a)))
			cos[i], cos[i+h] = c, c
			sin[i], sin[i+h] = s, s
		}
	}
	r.filled = max(r.filled, n)
}

// at returns the tables of position pos.
func (r *rope) at(pos int) (cos, sin []float32) {
	d := r.headDim
	return r.cos[pos*d : (pos+1)*d], r.sin[pos*d : (pos+1)*d]
}
