package kernels

import "math"

// Rope holds the rotary embedding tables cos and sin, [maxTokens][dim], computed the way
// Hugging Face's rotary embeddings do in float32 from the inverse frequencies:
//
//	angle    = float32(pos) * inv_freq[i]          (one float32 product)
//	cos[pos] = cos(cat(angle, angle)), sin likewise
//
// Matching the float32 angle matters: at position 700 with theta 1e6 the float32 rounding of
// the angle is already 4e-5 rad, visible at the golden tests' tolerance if computed in float64.
// Rows are filled on first use, so a long context costs nothing until it is reached. Apply the
// tables with RoPE. A Rope is not safe for concurrent use (each sequence state owns one).
type Rope struct {
	dim      int
	invFreq  []float32
	cos, sin []float32
	filled   int // rows [0, filled) are computed
}

// NewRope allocates the tables for positions [0, maxTokens) of a rotation over 2*len(invFreq)
// dimensions (the model computes invFreq: the default frequencies, or a scaled variant).
func NewRope(invFreq []float32, maxTokens int) *Rope {
	d := 2 * len(invFreq)
	return &Rope{dim: d, invFreq: invFreq, cos: make([]float32, maxTokens*d), sin: make([]float32, maxTokens*d)}
}

// DefaultInvFreq returns RoPE's default inverse frequencies for dim rotated dimensions as
// transformers computes them in float32: inv_freq[i] = 1 / theta^(2i/dim), with theta first
// rounded to float32 (torch promotes the Python float base to the float32 tensor's type).
func DefaultInvFreq(theta float64, dim int) []float32 {
	inv := make([]float32, dim/2)
	base := float32(theta)
	for i := range inv {
		e := float32(2*i) / float32(dim)
		p := float32(math.Pow(float64(base), float64(e)))
		inv[i] = 1 / p
	}
	return inv
}

// UpTo makes rows [0, n) available.
func (r *Rope) UpTo(n int) {
	d, h := r.dim, r.dim/2
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
	d := r.dim
	return r.cos[pos*d : (pos+1)*d], r.sin[pos*d : (pos+1)*d]
}
