package kernels

import "math"

// Rope holds the rotary embedding tables cos and sin, [maxTokens][headDim], computed the way
// Hugging Face's Qwen2RotaryEmbedding does in float32 (default rope type, scaling 1):
//
//	inv_freq[i] = 1 / theta^(2i/headDim)              (float32 throughout)
//	angle       = float32(pos) * inv_freq[i]          (one float32 product)
//	cos[pos]    = cos(cat(angle, angle)), sin likewise
//
// Matching the float32 angle matters: at position 700 with theta 1e6 the float32 rounding of
// the angle is already 4e-5 rad, visible at the golden tests' tolerance if computed in float64.
// Rows are filled on first use, so a long context costs nothing until it is reached. Apply the
// tables with RoPE. A Rope is not safe for concurrent use (each sequence state owns one).
type Rope struct {
	headDim  int
	invFreq  []float32
	cos, sin []float32
	filled   int // rows [0, filled) are computed
}

// NewRope allocates the tables for positions [0, maxTokens) of heads of headDim (even) values.
func NewRope(theta float64, headDim, maxTokens int) *Rope {
	r := &Rope{headDim: headDim, invFreq: make([]float32, headDim/2),
		cos: make([]float32, maxTokens*headDim), sin: make([]float32, maxTokens*headDim)}
	base := float32(theta) // torch promotes the Python float base to the float32 tensor's type
	for i := range r.invFreq {
		e := float32(2*i) / float32(headDim)
		p := float32(math.Pow(float64(base), float64(e)))
		r.invFreq[i] = 1 / p
	}
	return r
}

// UpTo makes rows [0, n) available.
func (r *Rope) UpTo(n int) {
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

// At returns the tables of position pos (which UpTo must have covered).
func (r *Rope) At(pos int) (cos, sin []float32) {
	d := r.headDim
	return r.cos[pos*d : (pos+1)*d], r.sin[pos*d : (pos+1)*d]
}
