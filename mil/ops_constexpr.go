package mil

// The constexpr ops decompress weights at compile time. The sim evaluates them once, with the
// arithmetic of coremltools' reference decompression (the same dtypes, the same roundings,
// docs/ane.md "Compressed weights"), and keeps the dense result as a constant. How each op is
// written depends on its opset: the iOS16 ops take bracket attributes and empty parentheses,
// the iOS18 ops take call arguments, usually inline BLOBFILE literals.

// compileAffineDequantize compiles the iOS16 constexpr_affine_dequantize, written in attribute
// form: out = scale · (quantized_data − zero_point), computed in float32 and rounded to the
// scale's dtype. scale and zero_point are scalars or vectors along axis.
func compileAffineDequantize(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	q, err := a.constant("quantized_data", InvalidDType)
	if err != nil {
		return nil, err
	}
	if q.typ.DType != Int8 && q.typ.DType != UInt8 {
		return nil, stmtErr(st, ErrType, "quantized_data is %s; constexpr_affine_dequantize takes int8 or uint8 (4-bit weights need constexpr_blockwise_shift_scale)", q.typ)
	}
	if q.typ.Rank() == 0 {
		return nil, stmtErr(st, ErrType, "quantized_data must be a tensor")
	}
	zp, err := a.constant("zero_point", InvalidDType)
	if err != nil {
		return nil, err
	}
	if zp.typ.DType != Int8 && zp.typ.DType != UInt8 && zp.typ.DType != FP32 {
		return nil, stmtErr(st, ErrType, "zero_point is %s; expected uint8, int8 or fp32", zp.typ)
	}
	sc, err := a.constant("scale", InvalidDType)
	if err != nil {
		return nil, err
	}
	if sc.typ.DType != FP16 && sc.typ.DType != FP32 {
		return nil, stmtErr(st, ErrType, "scale is %s; expected fp16 or fp32", sc.typ)
	}
	ax, err := a.intScalar("axis", 0, true)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(st, "axis", ax, q.typ.Rank())
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
			return nil, stmtErr(st, ErrType, "%s is %s; it must be a scalar or a vector of the %d values along axis %d", p.name, p.v.typ, q.typ.Shape[axis], axis)
		}
	}
	t := TensorType(sc.typ.DType, q.typ.Shape...)
	if err := c.growthBy(st, t, constexprGrowth, q, sc, zp); err != nil {
		return nil, err
	}
	out, err := c.alloc(st, t.Elements())
	if err != nil {
		return nil, err
	}
	scale := c.floats(sc)
	zpFloat := zp.typ.DType == FP32
	var zf []float32
	if zpFloat {
		zf = c.floats(zp)
	}
	zi, qi := intReader(zp), intReader(q)
	_, n, inner := splitAt(q.typ.Shape, axis)
	for i := range out {
		ch := (i / inner) % n
		k, s := 0, scale[0]
		if zp.typ.Rank() == 1 {
			k = ch
		}
		if len(scale) > 1 {
			s = scale[ch]
		}
		z := float32(0)
		if zpFloat {
			z = zf[k]
		} else {
			z = float32(zi.at(k))
		}
		out[i] = s * (float32(qi.at(i)) - z)
	}
	return constResult(t, out), nil
}

// compileBlockwiseShiftScale compiles the iOS18 constexpr_blockwise_shift_scale:
// out = scale · (data − offset), where scale (and offset) have data's rank and each of their
// dimensions divides data's, giving the block size along that dimension. As in coremltools,
// data is first converted to the scale's dtype, the subtraction and the product are each
// rounded to the dtype numpy promotes them to (fp32 when scale or offset is fp32, else fp16),
// and the result is the scale's dtype.
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
	if r == 0 || sc.typ.Rank() != r {
		return nil, stmtErr(st, ErrType, "scale %s must have the rank of data %s (at least 1)", sc.typ, data.typ)
	}
	block := make([]int, r)
	for d := 0; d < r; d++ {
		if sc.typ.Shape[d] == 0 || data.typ.Shape[d]%sc.typ.Shape[d] != 0 {
			return nil, stmtErr(st, ErrType, "scale dimension %d (%d) does not divide data's (%d)", d, sc.typ.Shape[d], data.typ.Shape[d])
		}
		block[d] = data.typ.Shape[d] / sc.typ.Shape[d]
	}
	var off *val
	if a.has("offset") {
		if off, err = a.constant("offset", InvalidDType); err != nil {
			return nil, err
		}
		if !equalInts(off.typ.Shape, sc.typ.Shape) {
			return nil, stmtErr(st, ErrType, "offset %s must have scale's shape %s", off.typ, shapeString(sc.typ.Shape))
		}
		switch dt := off.typ.DType; {
		case dt == FP16 || dt == FP32:
		case dt == data.typ.DType:
		default:
			return nil, stmtErr(st, ErrType, "offset is %s; an integer offset must have data's dtype %s (or use fp16/fp32)", off.typ, data.typ.DType)
		}
	}
	t := TensorType(sc.typ.DType, data.typ.Shape...)
	if err := c.growthBy(st, t, constexprGrowth, data, sc); err != nil {
		return nil, err
	}
	out, err := c.alloc(st, t.Elements())
	if err != nil {
		return nil, err
	}
	dst := sc.typ.DType
	mathType := dst // numpy's promotion of (data as dst) with offset, then with scale
	if off != nil && off.typ.DType == FP32 {
		mathType = FP32
	}
	var dataF, offF []float32
	if data.typ.DType.IsFloat() {
		dataF = c.floats(data)
	}
	dataI := intReader(data)
	var offI ints
	if off != nil {
		if off.typ.DType.IsFloat() {
			offF = c.floats(off)
		} else {
			offI = intReader(off)
		}
	}
	scale := c.floats(sc)
	scStr := strides(sc.typ.Shape)
	idx := make([]int, r)
	for i := range out {
		s := 0
		for d := 0; d < r; d++ {
			s += idx[d] / block[d] * scStr[d]
		}
		var v float32
		if dataF != nil {
			v = roundTo(dst, dataF[i])
		} else {
			v = roundTo(dst, float32(dataI.at(i)))
		}
		switch {
		case offF != nil:
			v = roundTo(mathType, v-offF[s])
		case off != nil:
			v = roundTo(mathType, v-float32(offI.at(s)))
		}
		out[i] = roundTo(mathType, scale[s]*v)
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < data.typ.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return constResult(t, out), nil
}

// roundTo rounds x to dt: fp16 rounds to nearest even, fp32 is exact.
func roundTo(dt DType, x float32) float32 {
	if dt == FP16 {
		return round16(x)
	}
	return x
}

// constResult wraps dense data as a constant, rounded to fp16 when t is fp16.
func constResult(t Type, data []float32) *val {
	if t.DType == FP16 {
		roundSlice16(data)
	}
	return &val{typ: t, konst: true, f: data, last: -1}
}
