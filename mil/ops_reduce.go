package mil

import "math"

// compileSoftmax compiles softmax(x, axis): exp(x - max) / Σ exp(x - max) along one axis.
func compileSoftmax(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	ax, err := a.intScalar("axis", -1, false)
	if err != nil {
		return nil, err
	}
	if x.typ.Rank() == 0 {
		return nil, stmtErr(st, ErrType, "softmax of a scalar")
	}
	axis, err := normAxis(st, "axis", ax, x.typ.Rank())
	if err != nil {
		return nil, err
	}
	outer, n, inner := splitAt(x.typ.Shape, axis)
	width := lastDim(x.typ.Shape)
	k := func(in [][]float32, out []float32, cols int) {
		src := in[0]
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				if cols < width && i%width >= cols {
					continue
				}
				base := o*n*inner + i
				m := float32(math.Inf(-1))
				for j := 0; j < n; j++ {
					m = max(m, src[base+j*inner])
				}
				var sum float32
				for j := 0; j < n; j++ {
					e := float32(math.Exp(float64(src[base+j*inner] - m)))
					out[base+j*inner] = e
					sum += e
				}
				for j := 0; j < n; j++ {
					out[base+j*inner] /= sum
				}
			}
		}
	}
	return c.emit(st, x.typ, []*val{x}, k, axis != x.typ.Rank()-1)
}

// splitAt returns the products of the dimensions before axis, at axis, and after it.
func splitAt(shape []int, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	return outer, shape[axis], inner
}

// compileReduceSum compiles reduce_sum(x, axes, keep_dims); without axes it sums everything.
func compileReduceSum(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	keep, err := a.boolean("keep_dims", false)
	if err != nil {
		return nil, err
	}
	r := x.typ.Rank()
	if r == 0 {
		return nil, stmtErr(st, ErrType, "reduce_sum of a scalar")
	}
	reduced := make([]bool, r)
	if a.has("axes") {
		axes, err := a.ints("axes")
		if err != nil {
			return nil, err
		}
		for _, ax := range axes {
			d, err := normAxis(st, "axes", ax, r)
			if err != nil {
				return nil, err
			}
			if reduced[d] {
				return nil, stmtErr(st, ErrType, "axis %d listed twice", d)
			}
			reduced[d] = true
		}
	} else {
		for i := range reduced {
			reduced[i] = true
		}
	}
	var out, kept []int
	for d, n := range x.typ.Shape {
		switch {
		case !reduced[d]:
			out = append(out, n)
			kept = append(kept, n)
		case keep:
			out = append(out, 1)
			kept = append(kept, 1)
		default:
			kept = append(kept, 1)
		}
	}
	// Walk the input in order; each element adds into the output at the index with reduced
	// dimensions dropped (their output stride is 0).
	outStr := bcastStrides(kept, x.typ.Shape)
	shape := x.typ.Shape
	idx := make([]int, r)
	k := func(in [][]float32, dst []float32, cols int) {
		src := in[0]
		for i := range dst {
			dst[i] = 0
		}
		for i := range idx {
			idx[i] = 0
		}
		for _, v := range src {
			if idx[r-1] < cols {
				o := 0
				for d := range idx {
					o += idx[d] * outStr[d]
				}
				dst[o] += v
			}
			for d := r - 1; d >= 0; d-- {
				idx[d]++
				if idx[d] < shape[d] {
					break
				}
				idx[d] = 0
			}
		}
	}
	// Column-local when the last axis is kept: its index passes through unchanged.
	return c.emit(st, TensorType(x.typ.DType, out...), []*val{x}, k, r > 0 && !reduced[r-1])
}
