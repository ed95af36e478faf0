package mil

// compileReshape compiles reshape(x, shape); one dimension may be -1 (inferred).
func compileReshape(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	sh, err := a.ints("shape")
	if err != nil {
		return nil, err
	}
	if len(sh) > maxRank {
		return nil, stmtErr(st, ErrType, "shape has rank %d; at most %d", len(sh), maxRank)
	}
	out := make([]int, len(sh))
	infer, known := -1, 1
	for i, d := range sh {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d > 0 && d <= int64(x.typ.Elements()):
			out[i] = int(d)
			known *= int(d)
			if known > x.typ.Elements() {
				return nil, stmtErr(st, ErrType, "shape %v holds more than the %d elements of %s", sh, x.typ.Elements(), x.typ)
			}
		default:
			return nil, stmtErr(st, ErrType, "bad dimension %d in shape %v", d, sh)
		}
	}
	if infer >= 0 {
		if known == 0 || x.typ.Elements()%known != 0 {
			return nil, stmtErr(st, ErrType, "cannot infer -1 in %v for %s", sh, x.typ)
		}
		out[infer] = x.typ.Elements() / known
		known *= out[infer]
	}
	if known != x.typ.Elements() {
		return nil, stmtErr(st, ErrType, "shape %v has %d elements; x %s has %d", sh, known, x.typ, x.typ.Elements())
	}
	// Rows stay rows when the last dimension is kept.
	return c.emit(st, TensorType(x.typ.DType, out...), []*val{x}, copyKernel(lastDim(out)), x.typ.Rank() > 0 && len(out) > 0 && lastDim(out) == lastDim(x.typ.Shape))
}

// compileTranspose compiles transpose(x, perm): output dimension d is input dimension perm[d].
func compileTranspose(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	perm, err := a.ints("perm")
	if err != nil {
		return nil, err
	}
	r := x.typ.Rank()
	if len(perm) != r {
		return nil, stmtErr(st, ErrType, "perm %v has %d entries; x %s has rank %d", perm, len(perm), x.typ, r)
	}
	seen := make([]bool, r)
	out := make([]int, r)
	inStr := strides(x.typ.Shape)
	step := make([]int, r) // input stride of each output dimension
	for d, p := range perm {
		q, err := normAxis(st, "perm", p, r)
		if err != nil {
			return nil, err
		}
		if seen[q] {
			return nil, stmtErr(st, ErrType, "perm %v is not a permutation", perm)
		}
		seen[q] = true
		out[d] = x.typ.Shape[q]
		step[d] = inStr[q]
	}
	idx := make([]int, r)
	k := func(in [][]float32, dst []float32, cols int) {
		gather(in[0], dst, out, step, idx, 0, cols)
	}
	return c.emit(st, TensorType(x.typ.DType, out...), []*val{x}, k, r > 0 && perm[r-1] == int64(r-1) || r > 0 && perm[r-1] == -1)
}

// gather fills dst (row-major in shape) with src[base + Σ idx[d]·step[d]], walking the last
// dimension in an inner loop, of which only the first cols elements.
func gather(src, dst []float32, shape, step, idx []int, base, cols int) {
	r := len(shape)
	if r == 0 {
		if len(dst) > 0 {
			dst[0] = src[base]
		}
		return
	}
	for i := range idx {
		idx[i] = 0
	}
	inner, st := shape[r-1], step[r-1]
	if inner == 0 {
		return
	}
	for o := 0; o < len(dst); o += inner {
		off := base
		for d := 0; d < r-1; d++ {
			off += idx[d] * step[d]
		}
		row := dst[o : o+min(inner, cols)]
		if st == 1 {
			copy(row, src[off:off+len(row)])
		} else {
			for j := range row {
				row[j] = src[off+j*st]
			}
		}
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

// compileSliceBySize compiles slice_by_size(x, begin, size); a size of -1 runs to the end.
func compileSliceBySize(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	begin, err := a.ints("begin")
	if err != nil {
		return nil, err
	}
	size, err := a.ints("size")
	if err != nil {
		return nil, err
	}
	r := x.typ.Rank()
	if len(begin) != r || len(size) != r {
		return nil, stmtErr(st, ErrType, "begin %v and size %v need %d entries for %s", begin, size, r, x.typ)
	}
	out := make([]int, r)
	base := 0
	inStr := strides(x.typ.Shape)
	for d := 0; d < r; d++ {
		n := int64(x.typ.Shape[d])
		b, s := begin[d], size[d]
		if b < 0 {
			b += n
		}
		if s == -1 {
			s = n - b
		}
		if b < 0 || s < 0 || b+s > n {
			return nil, stmtErr(st, ErrType, "slice [%d, %d+%d) of dimension %d (size %d) is out of range", begin[d], begin[d], size[d], d, n)
		}
		out[d] = int(s)
		base += int(b) * inStr[d]
	}
	idx := make([]int, r)
	k := func(in [][]float32, dst []float32, cols int) {
		gather(in[0], dst, out, inStr, idx, base, cols)
	}
	// Column-local when the last dimension is taken whole.
	return c.emit(st, TensorType(x.typ.DType, out...), []*val{x}, k, r > 0 && out[r-1] == x.typ.Shape[r-1])
}

// compileConcat compiles concat(values, axis, interleave = false).
func compileConcat(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	vs, err := a.tuple("values")
	if err != nil {
		return nil, err
	}
	ax, err := a.intScalar("axis", 0, true)
	if err != nil {
		return nil, err
	}
	inter, err := a.boolean("interleave", false)
	if err != nil {
		return nil, err
	}
	if inter {
		return nil, stmtErr(st, ErrUnsupported, "interleave = true")
	}
	if len(vs) == 0 {
		return nil, stmtErr(st, ErrType, "concat of nothing")
	}
	for i, v := range vs {
		if v.typ.Kind != KindTensor || (v.typ.DType != FP16 && v.typ.DType != FP32) {
			return nil, stmtErr(st, ErrType, "values[%d] must be an fp16 or fp32 tensor, not %s", i, v.typ)
		}
	}
	first := vs[0].typ
	if first.Rank() == 0 {
		return nil, stmtErr(st, ErrType, "concat of scalars")
	}
	axis, err := normAxis(st, "axis", ax, first.Rank())
	if err != nil {
		return nil, err
	}
	out := append([]int(nil), first.Shape...)
	out[axis] = 0
	blocks := make([]int, len(vs)) // elements each input contributes per outer index
	for i, v := range vs {
		t := v.typ
		if t.DType != first.DType || t.Rank() != first.Rank() {
			return nil, stmtErr(st, ErrType, "values[%d] is %s; values[0] is %s", i, t, first)
		}
		for d := range t.Shape {
			if d != axis && t.Shape[d] != first.Shape[d] {
				return nil, stmtErr(st, ErrType, "values[%d] %s differs from values[0] %s outside axis %d", i, t, first, axis)
			}
		}
		out[axis] += t.Shape[axis]
		_, n, inner := splitAt(t.Shape, axis)
		blocks[i] = n * inner
	}
	outer, _, _ := splitAt(out, axis)
	width := lastDim(out)
	k := func(in [][]float32, dst []float32, cols int) {
		o := 0
		for b := 0; b < outer; b++ {
			for i, src := range in {
				n := blocks[i]
				if cols >= width {
					copy(dst[o:o+n], src[b*n:(b+1)*n])
				} else {
					for r := 0; r < n; r += width {
						copy(dst[o+r:o+r+cols], src[b*n+r:b*n+r+cols])
					}
				}
				o += n
			}
		}
	}
	return c.emit(st, TensorType(first.DType, out...), vs, k, axis != len(out)-1)
}

// compileCast compiles cast(x, dtype) between fp16 and fp32; the result is rounded to dtype.
func compileCast(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	x, err := a.tensor("x")
	if err != nil {
		return nil, err
	}
	to, err := a.str("dtype", "", true)
	if err != nil {
		return nil, err
	}
	var dt DType
	switch to {
	case "fp16":
		dt = FP16
	case "fp32":
		dt = FP32
	default:
		return nil, stmtErr(st, ErrUnsupported, "cast to %q; the sim casts between fp16 and fp32", to)
	}
	return c.emit(st, TensorType(dt, x.typ.Shape...), []*val{x}, copyKernel(lastDim(x.typ.Shape)), x.typ.Rank() > 0)
}
