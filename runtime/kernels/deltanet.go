package kernels

import (
	"fmt"
	"math"
)

// The Gated DeltaNet's per-token operations (Qwen3.5's linear-attention layers), in float32
// as transformers' torch implementation computes them (torch_recurrent_gated_delta_rule,
// torch_causal_conv1d_update, l2norm, Qwen3_5RMSNormGated). The decoder (package runtime)
// lays the layer's buffers out and splits the heads over cores.

// DeltaHead is one value head of a Gated DeltaNet layer over a run of tokens: its recurrent
// state and where its inputs and outputs sit in the layer's token-major buffers. Token t's
// vectors start at t times the stride.
type DeltaHead struct {
	// State holds S as c·Ŝ: Ŝ transposed, [ValueDim][KeyDim] row-major (so that Ŝᵀk and
	// Ŝᵀq are matrix-vector products over its rows), then the scale c (StateLen values). All
	// zeros is the empty state. It is updated in place.
	State            []float32
	KeyDim, ValueDim int
	// Q and K are the head's query and key (KeyDim values each, the query already L2-normed
	// and scaled by KeyDim^-0.5, the key L2-normed), QKStride apart.
	Q, K     []float32
	QKStride int
	// V is the head's value (ValueDim values), VStride apart.
	V       []float32
	VStride int
	// Decay is e^g and Beta is β of each token, GStride apart.
	Decay, Beta []float32
	GStride     int
	// Out receives S'ᵀq (ValueDim values), OutStride apart.
	Out       []float32
	OutStride int
	// Scratch holds ValueDim values.
	Scratch []float32
}

// StateLen returns the length of a head's State: the key_dim x value_dim matrix and its scale.
func StateLen(keyDim, valueDim int) int { return keyDim*valueDim + 1 }

// Run advances the head through tokens [t0, t1) with the gated delta rule:
//
//	S ← S·e^g;  m = Sᵀk;  δ = (v − m)·β;  S ← S + k δᵀ;  out = Sᵀq
//
// S is kept as c·Ŝ so that the decay is one multiplication of c instead of a pass over S:
// m = c·(Ŝᵀk), Ŝ ← Ŝ + k (δ/c)ᵀ, out = c·(Ŝᵀq): a matrix-vector product, an Axpy per row and
// another product, with Ŝ stored transposed. Ŝ = S/c grows as c shrinks; when c falls below
// 2^-60 (long before float32 could overflow) it is folded back, Ŝ ← c·Ŝ and c = 1. That happens at the same tokens however
// the tokens are split into runs, so a sequence run in pieces gives bit for bit what it gives
// in one run. The result equals transformers' to float32 rounding: c is the product of the
// decays rounded once per token, as transformers rounds S·e^g once per element. It allocates
// nothing.
func (h *DeltaHead) Run(t0, t1 int) {
	dk, dv := h.KeyDim, h.ValueDim
	if len(h.State) < StateLen(dk, dv) || len(h.Scratch) < dv {
		panic(fmt.Sprintf("kernels.DeltaHead: state of %d and scratch of %d values for %dx%d", len(h.State), len(h.Scratch), dk, dv))
	}
	s, m := h.State[:dk*dv], h.Scratch[:dv]
	c := h.State[dk*dv] // 0 in an empty state: folded at the first token
	for t := t0; t < t1; t++ {
		q := h.Q[t*h.QKStride : t*h.QKStride+dk]
		k := h.K[t*h.QKStride : t*h.QKStride+dk]
		v := h.V[t*h.VStride : t*h.VStride+dv]
		out := h.Out[t*h.OutStride : t*h.OutStride+dv]
		c *= h.Decay[t*h.GStride]
		if c < minScale {
			Scale(s, c)
			c = 1
		}
		beta := h.Beta[t*h.GStride]
		// m = Ŝᵀk; then δ/c = (v − c·m)·β/c, kept in m.
		MatVecF32(m, s, k, dv, dk)
		for j := range m {
			m[j] = (v[j] - float32(c*m[j])) * beta / c
		}
		// Ŝ += k (δ/c)ᵀ: row j of the transpose gains (δ/c)_j·k. Then out = c·(Ŝᵀq).
		for j, u := range m {
			Axpy(s[j*dk:(j+1)*dk], u, k)
		}
		MatVecF32(out, s, q, dv, dk)
		Scale(out, c)
	}
	h.State[dk*dv] = c
}

// minScale is where DeltaHead.Run folds its scale back into the state: Ŝ = S/c stays below
// 2^60 times S, and its products with unit-length keys far inside float32's range (2^127).
const minScale = 0x1p-60

// CausalConvSiLU is the Gated DeltaNet's causal depthwise convolution with its activation, for
// n tokens of channels channels and a kernel of kernel taps: win holds kernel-1+n rows of
// inputs, the kernel-1 before the first token (zeros at the start of a sequence) and then the
// tokens', and
//
//	out[t][c] = silu(Σ_j w[c][j] · win[t+j][c])
//
// where w is conv1d.weight, [channels][1][kernel] (PyTorch's cross-correlation, no bias).
func CausalConvSiLU(out, win, w []float32, n, channels, kernel int) {
	if len(out) < n*channels || len(win) < (n+kernel-1)*channels || len(w) < channels*kernel {
		panic(fmt.Sprintf("kernels.CausalConvSiLU: out %d, window %d, weight %d values for %d tokens of %d channels, kernel %d",
			len(out), len(win), len(w), n, channels, kernel))
	}
	for t := 0; t < n; t++ {
		o := out[t*channels : (t+1)*channels]
		clear(o)
		for j := 0; j < kernel; j++ {
			in := win[(t+j)*channels : (t+j+1)*channels]
			for c, x := range in {
				o[c] += float32(w[c*kernel+j] * x)
			}
		}
		for c, x := range o {
			o[c] = x / (1 + expf32(-x))
		}
	}
}

// L2Norm scales x in place to unit length: x · rsqrt(Σx² + eps), transformers' l2norm (the
// Gated DeltaNet normalises each query and key head with eps 1e-6).
func L2Norm(x []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(float64(float32(ss)+eps)))
	for i, v := range x {
		x[i] = v * r
	}
}

// MulSiLU sets x[i] *= silu(gate[i]), silu(g) = g/(1+e^-g): the output gate of the Gated
// DeltaNet's norm.
func MulSiLU(x, gate []float32) {
	gate = gate[:len(x)]
	for i, g := range gate {
		x[i] *= g / (1 + expf32(-g))
	}
}

// MulSigmoid sets x[i] *= sigmoid(gate[i]): gated attention's output gate.
func MulSigmoid(x, gate []float32) {
	gate = gate[:len(x)]
	for i, g := range gate {
		x[i] *= Sigmoid(g)
	}
}

// Sigmoid returns 1/(1+e^-x) in float32.
func Sigmoid(x float32) float32 { return 1 / (1 + expf32(-x)) }

// Softplus returns log(1+e^x) as PyTorch's softplus (beta 1, threshold 20) does: x itself above
// the threshold, where the two agree in float32.
func Softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}
