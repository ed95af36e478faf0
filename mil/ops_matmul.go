package mil

import "sync"

// compileMatmul compiles matmul(x, y, transpose_x, transpose_y) on rank >= 2 tensors: the last
// two dimensions multiply ([M, K] x [K, N]), the leading ones broadcast.
func compileMatmul(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	y, err := a.tensor("y")
	if err != nil {
		return nil, err
	}
	tx, err := a.boolean("transpose_x", false)
	if err != nil {
		return nil, err
	}
	ty, err := a.boolean("transpose_y", false)
	if err != nil {
		return nil, err
	}
	if x.typ.DType != y.typ.DType {
		return nil, stmtErr(st, ErrType, "x is %s but y is %s", x.typ, y.typ)
	}
	xr, yr := x.typ.Rank(), y.typ.Rank()
	if xr < 2 || yr < 2 {
		return nil, stmtErr(st, ErrUnsupported, "matmul of rank %d and %d; the sim needs rank >= 2", xr, yr)
	}
	xs, ys := x.typ.Shape, y.typ.Shape
	m, kx := xs[xr-2], xs[xr-1]
	if tx {
		m, kx = kx, m
	}
	ky, n := ys[yr-2], ys[yr-1]
	if ty {
		ky, n = n, ky
	}
	if kx != ky {
		return nil, stmtErr(st, ErrType, "inner dimensions differ: x %s gives K = %d, y %s gives K = %d", x.typ, kx, y.typ, ky)
	}
	batch, ok := broadcastShapes(xs[:xr-2], ys[:yr-2])
	if !ok {
		return nil, stmtErr(st, ErrType, "batch dimensions %s and %s do not broadcast", shapeString(xs[:xr-2]), shapeString(ys[:yr-2]))
	}
	out := append(append([]int{}, batch...), m, n)
	k := &matmulKernel{m: m, k: kx, n: n, tx: tx, ty: ty, batch: batch,
		xStr: bcastStrides(xs[:xr-2], batch), yStr: bcastStrides(ys[:yr-2], batch), idx: make([]int, len(batch))}
	if k.a, err = c.alloc(st, m*kx); err != nil {
		return nil, err
	}
	if k.bt, err = c.alloc(st, n*kx); err != nil {
		return nil, err
	}
	for i := range k.xStr {
		k.xStr[i] *= m * kx
		k.yStr[i] *= n * kx
	}
	k.work = func(lo, hi int) { dotRows(k.a, k.bt, k.c, k.k, k.n, k.n, lo, hi) }
	return c.emit(st, TensorType(x.typ.DType, out...), []*val{x, y}, k.run, false)
}

// matmulKernel copies each batch's operands into row-major A [M, K] and transposed B [N, K],
// then reuses the conv dot-product kernel.
type matmulKernel struct {
	m, k, n    int
	tx, ty     bool
	batch      []int
	xStr, yStr []int // element strides of one batch step, 0 on broadcast dimensions
	a, bt, c   []float32
	idx        []int
	work       func(lo, hi int)
	wg         sync.WaitGroup
}

func (k *matmulKernel) run(in [][]float32, out []float32, _ int) {
	x, y := in[0], in[1]
	mk, nk, mn := k.m*k.k, k.n*k.k, k.m*k.n
	for i := range k.idx {
		k.idx[i] = 0
	}
	for o := 0; o < len(out); o += mn {
		xo, yo := 0, 0
		for d := range k.idx {
			xo += k.idx[d] * k.xStr[d]
			yo += k.idx[d] * k.yStr[d]
		}
		xb, yb := x[xo:xo+mk], y[yo:yo+nk]
		if k.tx { // x holds [K, M]
			for r := 0; r < k.k; r++ {
				for col := 0; col < k.m; col++ {
					k.a[col*k.k+r] = xb[r*k.m+col]
				}
			}
		} else {
			copy(k.a, xb)
		}
		if k.ty { // y holds [N, K]: already B transposed
			copy(k.bt, yb)
		} else {
			for r := 0; r < k.k; r++ {
				for col := 0; col < k.n; col++ {
					k.bt[col*k.k+r] = yb[r*k.n+col]
				}
			}
		}
		k.c = out[o : o+mn]
		grain := max(1, (1<<18)/max(1, k.k*k.n))
		parallelFor(k.m, grain, k.work, &k.wg)
		for d := len(k.idx) - 1; d >= 0; d-- {
			k.idx[d]++
			if k.idx[d] < k.batch[d] {
				break
			}
			k.idx[d] = 0
		}
	}
	k.c = nil
}
