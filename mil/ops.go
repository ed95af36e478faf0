package mil

// ops lists every op the sim executes, with the parameter names each accepts (the names of
// docs/ane.md "Program text" and coremltools). Anything else is refused as unknown.
var ops = map[string]*opDef{
	"const": {params: []string{"val"}, style: constArgs, compile: compileConst},

	"add":      {params: []string{"x", "y"}, compile: binaryOp(binAdd)},
	"sub":      {params: []string{"x", "y"}, compile: binaryOp(binSub)},
	"mul":      {params: []string{"x", "y"}, compile: binaryOp(binMul)},
	"pow":      {params: []string{"x", "y"}, compile: binaryOp(binPow)},
	"sigmoid":  {params: []string{"x"}, compile: unaryOp(unSigmoid)},
	"identity": {params: []string{"x"}, compile: unaryOp(unIdentity)},

	"conv":   {params: []string{"x", "weight", "bias", "strides", "pad_type", "pad", "dilations", "groups"}, compile: compileConv},
	"matmul": {params: []string{"x", "y", "transpose_x", "transpose_y"}, compile: compileMatmul},

	"softmax":    {params: []string{"x", "axis"}, compile: compileSoftmax},
	"reduce_sum": {params: []string{"x", "axes", "keep_dims"}, compile: compileReduceSum},

	"reshape":       {params: []string{"x", "shape"}, compile: compileReshape},
	"transpose":     {params: []string{"x", "perm"}, compile: compileTranspose},
	"slice_by_size": {params: []string{"x", "begin", "size"}, compile: compileSliceBySize},
	"concat":        {params: []string{"values", "axis", "interleave"}, compile: compileConcat},
	"cast":          {params: []string{"x", "dtype"}, compile: compileCast},

	"constexpr_affine_dequantize": {params: []string{"quantized_data", "zero_point", "scale", "axis"}, style: attrArgs, compile: compileAffineDequantize},
	// constexpr_lut_to_dense is two ops: the iOS16 one (attributes) and, in ios18 functions,
	// the iOS18 one of the same name (call arguments).
	"constexpr_lut_to_dense": {params: []string{"indices", "lut", "shape", "vector_axis"}, style: attrArgs, callIn18: true, compile: compileLUTToDense},
	// constexpr_blockwise_shift_scale is an iOS18 op and takes its inputs as call arguments:
	// inline BLOBFILE literals as coremltools writes them, or const variables.
	"constexpr_blockwise_shift_scale": {params: []string{"data", "scale", "offset"}, compile: compileBlockwiseShiftScale},
}

func compileConst(c *compiler, st *Stmt, a *opArgs) (*val, error) {
	v, err := a.get("val")
	if err != nil {
		return nil, stmtErr(st, ErrType, "const needs a val attribute")
	}
	return v, nil
}

// normAxis maps a possibly negative axis onto [0, rank).
func normAxis(st *Stmt, name string, axis int64, rank int) (int, error) {
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) {
		return 0, stmtErr(st, ErrType, "%s %d is out of range for rank %d", name, axis, rank)
	}
	return int(axis), nil
}

// strides returns row-major strides of shape.
func strides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// copyKernel copies its input (reshape, cast, identity); with cols < width, only the first
// cols elements of each row of length width.
func copyKernel(width int) kernelFn {
	return func(in [][]float32, out []float32, cols int) {
		if cols >= width {
			copy(out, in[0])
			return
		}
		for o := 0; o < len(out); o += width {
			copy(out[o:o+cols], in[0][o:o+cols])
		}
	}
}
