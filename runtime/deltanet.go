package runtime

import (
	"fmt"
	"math"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// The Gated DeltaNet token mixer of Qwen3.5's linear-attention layers (transformers'
// Qwen3_5GatedDeltaNet, see arch.Family.LinearAttention). The backend computes its two groups
// of projections (linear_attn_in, linear_attn_out); everything between them runs here, on the
// CPU, in float32: the causal convolution, the per-head normalisation and gates, the recurrence
// and the gated output norm.

// l2Eps is the epsilon of the query and key L2 norms (transformers' l2norm default, which the
// Gated DeltaNet uses; it is not rms_norm_eps).
const l2Eps = 1e-6

// deltaNetLayer holds the parameters of one Gated DeltaNet layer the decoder applies itself.
type deltaNetLayer struct {
	index  int       // which of the sequence state's DeltaNet layers (linearState.layer)
	conv   []float32 // [conv channels][kernel] conv1d.weight
	dtBias []float32 // [value heads]
	negA   []float32 // [value heads] −exp(A_log), as transformers computes it in float32
	norm   []float32 // [value head dim] the output norm's weight (plain, not 1 + w)
}

// newDeltaNetLayer reads layer l's parameters; index counts the DeltaNet layers before it.
func newDeltaNetLayer(m *Model, l, index int) (*deltaNetLayer, error) {
	L := &deltaNetLayer{index: index}
	var err error
	vec := func(s arch.Slot) []float32 {
		var v []float32
		if err == nil {
			v, err = m.Vector(s, l)
			if err == nil && v == nil {
				err = fmt.Errorf("%s: layer %d is a linear-attention layer without a %s tensor", m.Name, l, s)
			}
		}
		return v
	}
	L.conv, L.dtBias, L.norm = vec(arch.LinConv), vec(arch.LinDtBias), vec(arch.LinNorm)
	aLog := vec(arch.LinALog)
	if err != nil {
		return nil, err
	}
	L.negA = make([]float32, len(aLog))
	for h, a := range aLog {
		L.negA[h] = -float32(math.Exp(float64(a)))
	}
	return L, nil
}

// deltaNet is the Gated DeltaNet block of layer l for the pass's rows: from the normed input
// ws.xn [rows, hidden] to out_proj's output in ws.tmp [rows, hidden], advancing each segment's
// recurrent state and convolution history past its tokens. The projections run over all rows;
// the convolution and the recurrence per segment.
func (d *Decoder) deltaNet(l int, ws *workspace, segs []segment, rows int) error {
	c := d.cfg
	inW, V := d.linInOut, c.LinearValueDim()
	// lin[rows, qkv | z | b | a] = in_proj_qkv, in_proj_z, in_proj_b, in_proj_a (one group).
	lin, o := ws.lin[:rows*inW], ws.linO[:rows*V]
	if err := ws.proj.Group(l, d.gLinIn, ws.xn[:rows*c.HiddenSize], rows, lin); err != nil {
		return err
	}
	for _, sg := range segs {
		sg.s.lin.mix(d.layers[l].linear, lin[sg.row*inW:], o[sg.row*V:], len(sg.tokens), sg.pos, d.eps)
	}
	// out = out_proj(o)
	return ws.proj.Group(l, d.gLinOut, o, rows, ws.tmp[:rows*c.HiddenSize])
}

// mix runs DeltaNet layer L of one sequence for its n tokens at positions pos...: from their
// input projections proj [n, qkv | z | b | a] to the heads' gated, normed outputs o [n, value
// heads · value dim], advancing the layer's recurrent state and convolution history.
func (ls *linearState) mix(L *deltaNetLayer, proj, o []float32, n, pos int, eps float32) {
	c := ls.cfg
	C, V, K := ls.conv, ls.value, c.LinearConvKernelDim
	hk, hv, dk, dv := c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim, c.LinearValueHeadDim
	inW := C + V + 2*hv
	state, tail := ls.layer(L.index)
	// The convolution reads the kernel-1 inputs before the batch (tail) and the batch's own:
	// win = tail | qkv rows; mixed = silu(conv(win)); the new tail is win's last kernel-1 rows.
	win := ls.win[:(K-1+n)*C]
	copy(win, tail)
	for i := 0; i < n; i++ {
		copy(win[(K-1+i)*C:(K+i)*C], proj[i*inW:i*inW+C])
	}
	ls.prep, ls.prepProj = L, proj
	ls.pool.Parallel(n, prepGrain, ls.prepFn)
	mixed := ls.mixed[:n*C]
	// The recurrence, every value head in parallel; value head h reads key head h / (hv/hk).
	for h := 0; h < hv; h++ {
		kh := h / (hv / hk)
		ls.heads[h] = kernels.DeltaHead{State: state[h*ls.headLen : (h+1)*ls.headLen], KeyDim: dk, ValueDim: dv,
			Q: mixed[kh*dk:], K: mixed[(hk+kh)*dk:], QKStride: C, V: mixed[2*hk*dk+h*dv:], VStride: C,
			Decay: ls.decay[h:], Beta: ls.beta[h:], GStride: hv, Out: o[h*dv:], OutStride: V,
			Scratch: ls.scratch[h*dv : (h+1)*dv]}
	}
	if at := ls.pendingAt - pos; at > 0 && at <= n {
		// This batch holds the position the pending snapshot is of: capture the layer's state
		// after the tokens before it, and the convolution inputs just before it.
		ls.run(0, at)
		ls.capture(L.index, state, win[at*C:(at+K-1)*C])
		ls.run(at, n)
	} else {
		ls.run(0, n)
	}
	copy(tail, win[n*C:(n+K-1)*C])
	// Each head's output: RMSNorm with the plain weight, times silu(z).
	for i := 0; i < n; i++ {
		for h := 0; h < hv; h++ {
			oh := o[i*V+h*dv : i*V+(h+1)*dv]
			kernels.RMSNorm(oh, oh, L.norm, eps)
			kernels.MulSiLU(oh, proj[i*inW+C+h*dv:i*inW+C+(h+1)*dv])
		}
	}
}

// prepGrain is the tokens of one work item of prepare: enough to amortise a hand-off, few
// enough that a prompt batch spreads over the cores.
const prepGrain = 8

// prepare is the per-token work between a DeltaNet layer's input projections and its
// recurrence, for tokens [lo, hi) of the batch (ls.prep's layer, ls.prepProj's projections,
// the convolution's window filled): the convolution, q and k L2-normed per key head (q then
// scaled by key_dim^-0.5), and per value head β = sigmoid(b) and e^g,
// g = −exp(A_log)·softplus(a + dt_bias).
func (ls *linearState) prepare(lo, hi int) {
	L, proj, c := ls.prep, ls.prepProj, ls.cfg
	C, V, K := ls.conv, ls.value, c.LinearConvKernelDim
	hk, hv, dk := c.LinearNumKeyHeads, c.LinearNumValueHeads, c.LinearKeyHeadDim
	inW := C + V + 2*hv
	kernels.CausalConvSiLU(ls.mixed[lo*C:hi*C], ls.win[lo*C:(hi+K-1)*C], L.conv, hi-lo, C, K)
	for i := lo; i < hi; i++ {
		row := ls.mixed[i*C : (i+1)*C]
		for h := 0; h < hk; h++ {
			q := row[h*dk : (h+1)*dk]
			kernels.L2Norm(q, l2Eps)
			kernels.Scale(q, ls.qScale)
			kernels.L2Norm(row[(hk+h)*dk:(hk+h+1)*dk], l2Eps)
		}
		b := proj[i*inW+C+V : i*inW+C+V+hv]
		a := proj[i*inW+C+V+hv : (i+1)*inW]
		for h := 0; h < hv; h++ {
			ls.beta[i*hv+h] = kernels.Sigmoid(b[h])
			g := L.negA[h] * kernels.Softplus(a[h]+L.dtBias[h])
			ls.decay[i*hv+h] = float32(math.Exp(float64(g)))
		}
	}
}
