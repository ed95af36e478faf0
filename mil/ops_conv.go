package mil

import (
	"sync"
)

// compileConv compiles the 1x1, groups = 1 convolution that implements a linear layer on the
// ANE (docs/ane.md, "Program text"): x [N, Cin, H, W], weight [Cout, Cin, 1, 1] -> [N, Cout, H, W]. Other
// kernels, groups, strides and padding are refused: anepack never emits them.
func compileConv(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	w, err := a.tensor("weight")
	if err != nil {
		return nil, err
	}
	if a.has("bias") {
		a.used["bias"] = true
		return nil, stmtErr(st, ErrUnsupported, "conv with a bias parameter: anepack's programs pass no bias; add it with a separate add")
	}
	if x.typ.Rank() != 4 || w.typ.Rank() != 4 {
		return nil, stmtErr(st, ErrType, "conv needs rank-4 x and weight, got %s and %s", x.typ, w.typ)
	}
	if x.typ.DType != w.typ.DType {
		return nil, stmtErr(st, ErrType, "x is %s but weight is %s; cast the weight first", x.typ, w.typ)
	}
	groups, err := a.intScalar("groups", 1, false)
	if err != nil {
		return nil, err
	}
	if groups != 1 {
		return nil, stmtErr(st, ErrUnsupported, "groups = %d; the sim implements groups = 1 only", groups)
	}
	for _, p := range []string{"strides", "dilations"} {
		if !a.has(p) {
			continue
		}
		v, err := a.ints(p)
		if err != nil {
			return nil, err
		}
		if len(v) != 2 || v[0] < 1 || v[1] < 1 {
			return nil, stmtErr(st, ErrType, "%s must be two positive int32s, got %v", p, v)
		}
		if p == "strides" && (v[0] != 1 || v[1] != 1) {
			return nil, stmtErr(st, ErrUnsupported, "strides %v; the sim implements strides [1, 1] only", v)
		}
	}
	padType, err := a.str("pad_type", "valid", false)
	if err != nil {
		return nil, err
	}
	switch padType {
	case "valid", "same", "custom":
	default:
		return nil, stmtErr(st, ErrType, "pad_type %q; expected valid, same or custom", padType)
	}
	if a.has("pad") {
		pad, err := a.ints("pad")
		if err != nil {
			return nil, err
		}
		if len(pad) != 4 {
			return nil, stmtErr(st, ErrType, "pad must have 4 values, got %v", pad)
		}
		for _, p := range pad {
			if p != 0 {
				return nil, stmtErr(st, ErrUnsupported, "pad %v; the sim implements 1x1 convolutions without padding", pad)
			}
		}
	}
	ws, xs := w.typ.Shape, x.typ.Shape
	if ws[2] != 1 || ws[3] != 1 {
		return nil, stmtErr(st, ErrUnsupported, "kernel size %dx%d; the sim implements 1x1 convolutions only", ws[2], ws[3])
	}
	if ws[1] != xs[1] {
		return nil, stmtErr(st, ErrType, "weight %s takes %d input channels but x %s has %d", w.typ, ws[1], x.typ, xs[1])
	}
	k := &convKernel{n: xs[0], cin: xs[1], cout: ws[0], s: xs[2] * xs[3]}
	if k.xt, err = c.alloc(st, k.s*k.cin); err != nil {
		return nil, err
	}
	k.work = k.rows
	return c.emit(st, TensorType(x.typ.DType, xs[0], ws[0], xs[2], xs[3]), []*val{x, w}, k.run, xs[2] == 1)
}

// convKernel computes y[o, s] = Σ_i w[o, i] · x[i, s] for one batch at a time. x is first
// transposed to xt [S, Cin] so that every output is a dot product of two contiguous rows;
// rows of outputs are split over CPUs.
type convKernel struct {
	n, cin, cout, s int
	cols            int // columns computed in this run (s unless column-limited)
	xt              []float32
	w, y            []float32 // bound for the duration of run
	work            func(lo, hi int)
	wg              sync.WaitGroup
}

func (k *convKernel) run(in [][]float32, out []float32, cols int) {
	x := in[0]
	k.w = in[1]
	k.cols = min(cols, k.s)
	for b := 0; b < k.n; b++ {
		xb := x[b*k.cin*k.s : (b+1)*k.cin*k.s]
		for i := 0; i < k.cin; i++ {
			row := xb[i*k.s : i*k.s+k.cols]
			for s, v := range row {
				k.xt[s*k.cin+i] = v
			}
		}
		k.y = out[b*k.cout*k.s : (b+1)*k.cout*k.s]
		// Split so that each part does at least ~256k multiply-adds.
		grain := max(1, (1<<18)/max(1, k.cin*k.cols))
		parallelFor(k.cout, grain, k.work, &k.wg)
	}
	k.w, k.y = nil, nil
}

// rows computes output channels [lo, hi): blocks of 4 channels × 2 positions keep 8
// accumulators, 4 weights and 2 inputs in registers. Every output is accumulated in index
// order by a single float32 accumulator.
func (k *convKernel) rows(lo, hi int) {
	dotRows(k.w, k.xt, k.y, k.cin, k.s, k.cols, lo, hi)
}

// dotRows sets y[o*S+s] = dot(w[o*I:], xt[s*I:]) for o in [lo, hi), s in [0, n).
func dotRows(w, xt, y []float32, I, S, n, lo, hi int) {
	o := lo
	for ; o+4 <= hi; o += 4 {
		w0 := w[o*I : o*I+I]
		w1 := w[(o+1)*I : (o+1)*I+I]
		w2 := w[(o+2)*I : (o+2)*I+I]
		w3 := w[(o+3)*I : (o+3)*I+I]
		s := 0
		for ; s+2 <= n; s += 2 {
			x0 := xt[s*I : s*I+I]
			x1 := xt[(s+1)*I : (s+1)*I+I]
			// Equal lengths let the compiler drop the bounds checks in the loop.
			x1 = x1[:len(x0)]
			w0, w1, w2, w3 := w0[:len(x0)], w1[:len(x0)], w2[:len(x0)], w3[:len(x0)]
			var a00, a01, a10, a11, a20, a21, a30, a31 float32
			for i := range x0 {
				u, v := x0[i], x1[i]
				b0, b1, b2, b3 := w0[i], w1[i], w2[i], w3[i]
				a00 += b0 * u
				a01 += b0 * v
				a10 += b1 * u
				a11 += b1 * v
				a20 += b2 * u
				a21 += b2 * v
				a30 += b3 * u
				a31 += b3 * v
			}
			y[o*S+s], y[o*S+s+1] = a00, a01
			y[(o+1)*S+s], y[(o+1)*S+s+1] = a10, a11
			y[(o+2)*S+s], y[(o+2)*S+s+1] = a20, a21
			y[(o+3)*S+s], y[(o+3)*S+s+1] = a30, a31
		}
		for ; s < n; s++ {
			x0 := xt[s*I : s*I+I]
			w0, w1, w2, w3 := w0[:len(x0)], w1[:len(x0)], w2[:len(x0)], w3[:len(x0)]
			var a0, a1, a2, a3 float32
			for i, u := range x0 {
				a0 += w0[i] * u
				a1 += w1[i] * u
				a2 += w2[i] * u
				a3 += w3[i] * u
			}
			y[o*S+s], y[(o+1)*S+s], y[(o+2)*S+s], y[(o+3)*S+s] = a0, a1, a2, a3
		}
	}
	for ; o < hi; o++ {
		wr := w[o*I : o*I+I]
		for s := 0; s < n; s++ {
			y[o*S+s] = dot(wr, xt[s*I:s*I+I])
		}
	}
}

// dot accumulates in index order, like every block above, so that a result does not depend
// on which block computed it (EvalColumns relies on that to match Eval bit for bit).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
