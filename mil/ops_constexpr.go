package mil

import "math/bits"

// The constexpr ops decompress weights at compile time (ane-facts §4.3, coremltools
// iOS16 constexpr_ops.py and iOS18 compression.py). The sim evaluates them once, in float64,
// and keeps the dense result as a constant rounded to the output dtype.

// compileAffineDequantize compiles the iOS16 constexpr_affine_dequantize, written in attribute
// form: out = (quantized_data - zero_point) · scale, with scale and zero_point scalars or
// vectors along axis.
func compileAffineDequantize(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	q, err := a.constant("quantized_data", InvalidDType)
	if err != nil {
		return nil, err
	}
	if q.typ.DType != Int8 && q.typ.DType != UInt8 {
		return nil, stmtErr(st, ErrType, "quantized_data is %s; constexpr_affine_dequantize takes int8 or uint8 (ane-facts §4.3)", q.typ)
	}
	zp, err := a.constant("zero_point", q.typ.DType)
	if err != nil {
		return nil, err
	}
	sc, err := a.constant("scale", InvalidDType)
	if err != nil {
		return nil, err
	}
	if sc.typ.DType != FP16 && sc.typ.DType != FP32 {
		return nil, stmtErr(st, ErrType, "scale is %s; expected fp16 or fp32", sc.typ)
	}
	r := q.typ.Rank()
	ax, err := a.intScalar("axis", 0, sc.typ.Rank() > 0 || zp.typ.Rank() > 0)
	if err != nil {
		return nil, err
	}
	if r == 0 {
		return nil, stmtErr(st, ErrType, "quantized_data must be a tensor")
	}
	axis, err := normAxis(st, "axis", ax, r)
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name string
		v    *val
	}{{"scale", sc}, {"zero_point", zp}} {
		switch {
		case p.v.typ.Rank() == 0:
		case p.v.typ.Rank() == 1 && p.v.typ.Shape[0] == q.typ.Shape[axis]:
		default:
			return nil, stmtErr(st, ErrANE, "%s is %s; it must be a scalar or a vector of %d values along axis %d (a rank-4 scale is rejected)", p.name, p.v.typ, q.typ.Shape[axis], axis)
		}
	}
	scale := c.floats(sc)
	_, n, inner := splitAt(q.typ.Shape, axis)
	out := make([]float32, q.typ.Elements())
	for i, qv := range q.ints {
		ch := (i / inner) % n
		z, s := zp.ints[0], scale[0]
		if len(zp.ints) > 1 {
			z = zp.ints[ch]
		}
		if len(scale) > 1 {
			s = scale[ch]
		}
		out[i] = float32(float64(qv-z) * float64(s))
	}
	return constResult(TensorType(sc.typ.DType, q.typ.Shape...), out), nil
}

// compileLUTToDense compiles the iOS16 constexpr_lut_to_dense: indices is a uint8 vector of
// n-bit codes packed least significant bit first, lut a vector of 2^n values, shape the dense
// output shape (uint32).
func compileLUTToDense(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	idx, err := a.constant("indices", InvalidDType)
	if err != nil {
		return nil, err
	}
	lut, err := a.constant("lut", InvalidDType)
	if err != nil {
		return nil, err
	}
	if !a.has("shape") {
		return nil, stmtErr(st, ErrUnsupported, "constexpr_lut_to_dense without shape is the iOS18 form; the sim implements the iOS16 form (indices, lut, shape)")
	}
	shp, err := a.constant("shape", InvalidDType)
	if err != nil {
		return nil, err
	}
	if shp.typ.DType != UInt32 || shp.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "shape is %s; the iOS16 form needs a uint32 vector (ane-facts §5)", shp.typ)
	}
	if idx.typ.DType != UInt8 || idx.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "indices is %s; the iOS16 form needs a uint8 vector of packed codes", idx.typ)
	}
	if (lut.typ.DType != FP16 && lut.typ.DType != FP32) || lut.typ.Rank() != 1 {
		return nil, stmtErr(st, ErrType, "lut is %s; the iOS16 form needs an fp16 or fp32 vector (ane-facts §5)", lut.typ)
	}
	size := lut.typ.Shape[0]
	nb := bits.TrailingZeros(uint(size))
	if size < 2 || size > 256 || size&(size-1) != 0 || nb == 7 {
		return nil, stmtErr(st, ErrType, "lut has %d entries; expected 2, 4, 16, 64 or 256", size)
	}
	if len(shp.ints) > maxRank {
		return nil, stmtErr(st, ErrType, "shape has rank %d", len(shp.ints))
	}
	out := make([]int, len(shp.ints))
	for i, d := range shp.ints {
		out[i] = int(d)
	}
	t := TensorType(lut.typ.DType, out...)
	if err := c.checkSize(st.Pos, st.Var, t); err != nil {
		return nil, err
	}
	n := t.Elements()
	if want := (n*nb + 7) / 8; len(idx.ints) != want {
		return nil, stmtErr(st, ErrType, "indices has %d bytes; %d %d-bit codes need %d", len(idx.ints), n, nb, want)
	}
	table := c.floats(lut)
	dense := make([]float32, n)
	for i := range dense {
		code := 0
		for k := 0; k < nb; k++ {
			b := i*nb + k
			code |= int(idx.ints[b/8]>>(b%8)&1) << k
		}
		dense[i] = table[code]
	}
	return constResult(t, dense), nil
}

// compileBlockwiseShiftScale compiles the iOS18 constexpr_blockwise_shift_scale:
// out = scale · (data - offset), where scale (and offset) have data's rank and each of their
// dimensions divides data's, giving the block size along that dimension.
func compileBlockwiseShiftScale(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	if !c.ios18 {
		return nil, stmtErr(st, ErrType, "constexpr_blockwise_shift_scale is an iOS18 op; the function is <%s>", c.fn.Opset)
	}
	data, err := a.constant("data", InvalidDType)
	if err != nil {
		return nil, err
	}
	switch data.typ.DType {
	case Int4, UInt4, Int8, UInt8, FP16, FP32:
	default:
		return nil, stmtErr(st, ErrType, "data is %s; expected int4, uint4, int8, uint8, fp16 or fp32", data.typ)
	}
	sc, err := a.constant("scale", InvalidDType)
	if err != nil {
		return nil, err
	}
	if sc.typ.DType != FP16 && sc.typ.DType != FP32 {
		return nil, stmtErr(st, ErrType, "scale is %s; expected fp16 or fp32", sc.typ)
	}
	r := data.typ.Rank()
	if sc.typ.Rank() != r || r == 0 {
		return nil, stmtErr(st, ErrType, "scale %s must have the rank of data %s", sc.typ, data.typ)
	}
	block := make([]int, r)
	for d := 0; d < r; d++ {
		if sc.typ.Shape[d] == 0 || data.typ.Shape[d]%sc.typ.Shape[d] != 0 {
			return nil, stmtErr(st, ErrType, "scale dimension %d (%d) does not divide data's (%d)", d, sc.typ.Shape[d], data.typ.Shape[d])
		}
		block[d] = data.typ.Shape[d] / sc.typ.Shape[d]
	}
	var off []float64
	if a.has("offset") {
		ov, err := a.constant("offset", InvalidDType)
		if err != nil {
			return nil, err
		}
		if !equalInts(ov.typ.Shape, sc.typ.Shape) || ov.typ.DType == Bool || ov.typ.DType == String {
			return nil, stmtErr(st, ErrType, "offset %s must have scale's shape %s", ov.typ, shapeString(sc.typ.Shape))
		}
		off = numbers(c, ov)
	}
	vals := numbers(c, data)
	scale := c.floats(sc)
	scStr := strides(sc.typ.Shape)
	idx := make([]int, r)
	out := make([]float32, len(vals))
	for i, v := range vals {
		s := 0
		for d := 0; d < r; d++ {
			s += idx[d] / block[d] * scStr[d]
		}
		if off != nil {
			v -= off[s]
		}
		out[i] = float32(v * float64(scale[s]))
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < data.typ.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return constResult(TensorType(sc.typ.DType, data.typ.Shape...), out), nil
}

// numbers returns a constant's values as float64, whatever its numeric dtype.
func numbers(c *compiler, v *val) []float64 {
	if v.typ.DType.IsFloat() {
		f := c.floats(v)
		out := make([]float64, len(f))
		for i, x := range f {
			out[i] = float64(x)
		}
		return out
	}
	out := make([]float64, len(v.ints))
	for i, x := range v.ints {
		out[i] = float64(x)
	}
	return out
}

// constResult wraps dense data as a constant, rounded to fp16 when t is fp16.
func constResult(t Type, data []float32) *val {
	if t.DType == FP16 {
		roundSlice16(data)
	}
	return &val{typ: t, konst: true, f: data, last: -1}
}
