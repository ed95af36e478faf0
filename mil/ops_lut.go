package mil

import "math/bits"

// compileLUTToDense compiles constexpr_lut_to_dense in the form of the function's opset: the
// iOS16 form (attributes indices, lut, shape) in ios15..ios17 functions, the iOS18 form (call
// arguments indices, lut, vector_axis) in ios18 functions. Both decompress exactly: every
// output element is a table entry.
func compileLUTToDense(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	if c.ios18 {
		if a.has("shape") {
			return nil, stmtErr(st, ErrType, "constexpr_lut_to_dense in an ios18 function is the iOS18 op (indices with the output's shape, lut [groups..., 2^nbits, vector size], optional vector_axis); the iOS16 form with shape needs an ios16 or ios17 function")
		}
		return compileLUT18(c, st, a)
	}
	if a.has("vector_axis") {
		return nil, stmtErr(st, ErrType, "vector_axis belongs to the iOS18 constexpr_lut_to_dense; this function is <%s>", c.fn.Opset)
	}
	return compileLUT16(c, st, a)
}

// lutDType checks the table's element type: uint8, int8, fp16 or fp32.
func lutDType(st *Stmt, lut *val) error {
	switch lut.typ.DType {
	case UInt8, Int8, FP16, FP32:
		return nil
	}
	return stmtErr(st, ErrType, "lut is %s; expected uint8, int8, fp16 or fp32 entries", lut.typ)
}

// compileLUT16 compiles the iOS16 form: indices is a uint8 vector of n-bit codes packed least
// significant bit first, lut a vector of 2^n values (n in 1, 2, 4, 6, 8), shape the dense
// output shape (uint32).
func compileLUT16(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	idx, err := a.constant("indices", InvalidDType)
	if err != nil {
		return nil, err
	}
	lut, err := a.constant("lut", InvalidDType)
	if err != nil {
		return nil, err
	}
	shp, err := a.constant("shape", InvalidDType)
	if err != nil {
		return nil, err
	}
	if shp.typ.DType != UInt32 || shp.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "shape is %s; the iOS16 form needs a uint32 vector", shp.typ)
	}
	if idx.typ.DType != UInt8 || idx.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "indices is %s; the iOS16 form needs a uint8 vector of packed codes", idx.typ)
	}
	if err := lutDType(st, lut); err != nil {
		return nil, err
	}
	if lut.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "lut is %s; the iOS16 form needs a vector (the rank-K+2 table is the iOS18 form)", lut.typ)
	}
	size := lut.typ.Shape[0]
	nb := bits.TrailingZeros(uint(size))
	switch size {
	case 2, 4, 16, 64, 256:
	default:
		return nil, stmtErr(st, ErrType, "lut has %d entries; expected 2, 4, 16, 64 or 256", size)
	}
	dims, err := c.intsOf(st, shp)
	if err != nil {
		return nil, err
	}
	if len(dims) > maxRank {
		return nil, stmtErr(st, ErrType, "shape has rank %d", len(dims))
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		shape[i] = int(d)
	}
	t := TensorType(lut.typ.DType, shape...)
	if err := c.checkSize(st.Pos, st.Var, t); err != nil {
		return nil, err
	}
	n := t.Elements()
	if want := (n*nb + 7) / 8; idx.typ.Shape[0] != want {
		return nil, stmtErr(st, ErrType, "indices has %d bytes; %d %d-bit codes need %d", idx.typ.Shape[0], n, nb, want)
	}
	codes := intReader(idx)
	code := func(i int) int {
		v := 0
		for k := 0; k < nb; k++ {
			b := i*nb + k
			v |= int(codes.at(b/8)>>(b%8)&1) << k
		}
		return v
	}
	return c.lutResult(st, t, n, code, lut, idx)
}

// compileLUT18 compiles the iOS18 form: indices (uint1/2/3/4/6/8) has the output's shape
// (except along vector_axis), lut is [g0, ..., gK-1, 2^nbits, V]: the table of the block of
// indices (i0 / (D0/g0), ...) is lut[block], and entry code is a vector of V values laid out
// along vector_axis (V = 1: scalar palettization, vector_axis optional).
func compileLUT18(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	idx, err := a.constant("indices", InvalidDType)
	if err != nil {
		return nil, err
	}
	lut, err := a.constant("lut", InvalidDType)
	if err != nil {
		return nil, err
	}
	var nb int
	switch idx.typ.DType {
	case UInt1, UInt2, UInt3, UInt4, UInt6, UInt8:
		nb = idx.typ.DType.Bits()
	default:
		return nil, stmtErr(st, ErrType, "indices is %s; the iOS18 form takes uint1, uint2, uint3, uint4, uint6 or uint8", idx.typ)
	}
	if err := lutDType(st, lut); err != nil {
		return nil, err
	}
	k := idx.typ.Rank()
	if k == 0 || lut.typ.Rank() != k+2 {
		return nil, stmtErr(st, ErrType, "lut %s must have two dimensions more than indices %s (at least rank 1)", lut.typ, idx.typ)
	}
	ls := lut.typ.Shape
	block := make([]int, k)
	for d := 0; d < k; d++ {
		if ls[d] == 0 || idx.typ.Shape[d]%ls[d] != 0 {
			return nil, stmtErr(st, ErrType, "lut dimension %d (%d) does not divide indices' (%d)", d, ls[d], idx.typ.Shape[d])
		}
		block[d] = idx.typ.Shape[d] / ls[d]
	}
	if ls[k] != 1<<nb {
		return nil, stmtErr(st, ErrType, "lut has %d entries per table; %s codes need %d", ls[k], idx.typ.DType, 1<<nb)
	}
	vec := ls[k+1]
	axis := -1
	if a.has("vector_axis") {
		ax, err := a.intScalar("vector_axis", 0, true)
		if err != nil {
			return nil, err
		}
		if axis, err = normAxis(st, "vector_axis", ax, k); err != nil {
			return nil, err
		}
	} else if vec > 1 {
		return nil, stmtErr(st, ErrType, "lut holds vectors of %d values; vector_axis must say along which axis they go", vec)
	}
	shape := append([]int(nil), idx.typ.Shape...)
	if vec > 1 {
		shape[axis] *= vec
	}
	t := TensorType(lut.typ.DType, shape...)
	if err := c.checkSize(st.Pos, st.Var, t); err != nil {
		return nil, err
	}
	codes := intReader(idx)
	lutStr := strides(ls)
	inStr := strides(idx.typ.Shape)
	outStr := strides(shape)
	// Element o of the output: its index along the vector axis splits into the code's
	// position and the vector element.
	entry := func(o int) int {
		in, table, v := 0, 0, 0
		for d := 0; d < k; d++ {
			i := o / outStr[d] % shape[d]
			if d == axis {
				i, v = i/vec, i%vec
			}
			in += i * inStr[d]
			table += i / block[d] * lutStr[d]
		}
		return table + int(codes.at(in))*lutStr[k] + v
	}
	return c.lutResult(st, t, t.Elements(), entry, lut, idx)
}

// lutResult builds the dense constant of n elements whose element i is lut entry entry(i)
// (a flat index into the table), as floats or, for integer tables, integers.
func (c *compiler) lutResult(st *Stmt, t Type, n int, entry func(int) int, lut, idx *val) (*val, error) {
	if err := c.growthBy(st, t, constexprGrowth, lut, idx); err != nil {
		return nil, err
	}
	if lut.typ.DType.IsFloat() {
		out, err := c.alloc(st, n)
		if err != nil {
			return nil, err
		}
		table := c.floats(lut)
		for i := range out {
			out[i] = table[entry(i)]
		}
		return constResult(t, out), nil
	}
	if err := c.charge(st.Pos, st.Var, "its values", 8*int64(n)); err != nil {
		return nil, err
	}
	table := intReader(lut)
	out := make([]int64, n)
	for i := range out {
		out[i] = table.at(entry(i))
	}
	return &val{typ: t, konst: true, ints: out, last: -1}, nil
}
