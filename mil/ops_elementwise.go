package mil

import "math"

type binKind uint8

const (
	binAdd binKind = iota
	binSub
	binMul
	binPow
)

// binaryOp compiles add/sub/mul/pow with numpy broadcasting; x and y must have the same dtype.
func binaryOp(kind binKind) func(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	return func(c *compiler, st *Stmt, a *opArgs) (*val, error) {
		x, err := a.tensor("x")
		if err != nil {
			return nil, err
		}
		y, err := a.tensor("y")
		if err != nil {
			return nil, err
		}
		if x.typ.DType != y.typ.DType {
			return nil, stmtErr(st, ErrType, "x is %s but y is %s; %s needs one dtype", x.typ, y.typ, st.Op)
		}
		shape, ok := broadcastShapes(x.typ.Shape, y.typ.Shape)
		if !ok {
			return nil, stmtErr(st, ErrType, "shapes %s and %s do not broadcast", shapeString(x.typ.Shape), shapeString(y.typ.Shape))
		}
		k := newBinKernel(kind, x.typ.Shape, y.typ.Shape, shape)
		// Column-local when both operands run along the output's last dimension or broadcast
		// a single column.
		w := lastDim(shape)
		xw, yw := lastDim(x.typ.Shape), lastDim(y.typ.Shape)
		local := len(shape) > 0 && (xw == w || xw == 1) && (yw == w || yw == 1)
		return c.emit(st, TensorType(x.typ.DType, shape...), []*val{x, y}, k.run, local)
	}
}

// broadcastShapes applies numpy broadcasting: trailing dimensions align, and each pair must be
// equal or contain a 1.
func broadcastShapes(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	if n == 0 {
		out = nil
	}
	return out, true
}

// binKernel walks the output row by row along its last dimension; each operand steps 0 or 1
// along that row, and its row start comes from per-dimension strides that are 0 on broadcast
// dimensions.
type binKernel struct {
	kind       binKind
	same       bool // identical shapes: one flat loop
	shape      []int
	xStr, yStr []int
	idx        []int
}

func newBinKernel(kind binKind, xs, ys, out []int) *binKernel {
	k := &binKernel{kind: kind, shape: out, idx: make([]int, len(out)), same: equalInts(xs, ys)}
	k.xStr = bcastStrides(xs, out)
	k.yStr = bcastStrides(ys, out)
	return k
}

func bcastStrides(s, out []int) []int {
	st := strides(s)
	r := make([]int, len(out))
	for i := range out {
		j := len(s) - len(out) + i
		if j >= 0 && s[j] != 1 {
			r[i] = st[j]
		}
	}
	return r
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (k *binKernel) run(in [][]float32, out []float32, cols int) {
	x, y := in[0], in[1]
	r := len(k.shape)
	if k.same && (r == 0 || cols >= k.shape[r-1]) {
		applyRow(k.kind, out, x, 1, y, 1)
		return
	}
	if r == 0 {
		applyRow(k.kind, out, x, 0, y, 0)
		return
	}
	inner := k.shape[r-1]
	n := min(inner, cols)
	xs, ys := k.xStr[r-1], k.yStr[r-1]
	idx := k.idx
	for i := range idx {
		idx[i] = 0
	}
	for o := 0; o < len(out); o += inner {
		xo, yo := 0, 0
		for d := 0; d < r-1; d++ {
			xo += idx[d] * k.xStr[d]
			yo += idx[d] * k.yStr[d]
		}
		applyRow(k.kind, out[o:o+n], x[xo:], xs, y[yo:], ys)
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < k.shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// applyRow computes out[j] = x[j*xs] op y[j*ys]; xs and ys are 0 or 1.
func applyRow(kind binKind, out, x []float32, xs int, y []float32, ys int) {
	n := len(out)
	if xs == 1 && ys == 1 {
		x, y = x[:n], y[:n]
		switch kind {
		case binAdd:
			for j := range out {
				out[j] = x[j] + y[j]
			}
		case binSub:
			for j := range out {
				out[j] = x[j] - y[j]
			}
		case binMul:
			for j := range out {
				out[j] = x[j] * y[j]
			}
		case binPow:
			for j := range out {
				out[j] = float32(math.Pow(float64(x[j]), float64(y[j])))
			}
		}
		return
	}
	for j := 0; j < n; j++ {
		a, b := x[j*xs], y[j*ys]
		switch kind {
		case binAdd:
			out[j] = a + b
		case binSub:
			out[j] = a - b
		case binMul:
			out[j] = a * b
		case binPow:
			out[j] = float32(math.Pow(float64(a), float64(b)))
		}
	}
}

type unKind uint8

const (
	unSigmoid unKind = iota
	unIdentity
)

func unaryOp(kind unKind) func(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	return func(c *compiler, st *Stmt, a *opArgs) (*val, error) {
		x, err := a.tensor("x")
		if err != nil {
			return nil, err
		}
		w := lastDim(x.typ.Shape)
		k := copyKernel(w)
		if kind == unSigmoid {
			k = sigmoidKernel(w)
		}
		return c.emit(st, x.typ, []*val{x}, k, x.typ.Rank() > 0)
	}
}

func sigmoidKernel(width int) kernelFn {
	return func(in [][]float32, out []float32, cols int) {
		n := min(width, cols)
		for o := 0; o < len(out); o += width {
			x, y := in[0][o:o+n], out[o:o+n]
			for i, v := range x {
				y[i] = float32(1 / (1 + math.Exp(-float64(v))))
			}
		}
	}
}
