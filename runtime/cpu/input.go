package cpu

import (
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/runtime/kernels"
)

// preparedInput is one input (n tokens of Cols values) prepared once for the weights that read
// it in another form than float32: quantized for quantized weights, in the form each format
// reads: q4 weights int8 activations per block of 32 (kernels.Int8Acts, W4A8), q8 weights 16-bit
// ones (kernels.Int16Acts, W8A16: int8 activations would add an error as large as the int8
// weights' own, half of an int8 bundle's KL divergence from its fp16 twin;
// docs/quantization.md); and, where amx says so (on a CPU with AMX-BF16), split into the three
// bfloat16 parts the AMX products of fp16 weights and q8 codes read (kernels.BF16Acts, exact:
// hi + mid + lo = x). prepare builds only the forms the weights at hand need, each once; the
// kernels only read them, so work items on different rows share one preparedInput. The zero
// value is ready to use (without AMX).
//
// A batch of q8 or q4 products (kernels.Q8FloatActs(n), kernels.Q4FloatActs(n): prefill,
// several decoding streams) reads the float input itself (kernels.MatMulQ8Float,
// kernels.MatMulQ4Float, faster there than W8A16/W4A8 and exact in the activations): prepare
// then only keeps x, which must stay unchanged until the products are done.
type preparedInput struct {
	// amx, when set, says for an input of n tokens whether prepare splits it for the AMX
	// products of fp16 and q8 weights (kernels.UseAMX; nil keeps them on the float and
	// integer kernels). pool, when set, splits over its threads.
	amx  func(n int) bool
	pool *kernels.Pool

	a8          kernels.Int8Acts
	a16         kernels.Int16Acts
	bf          kernels.BF16Acts
	has8, has16 bool
	hasBF       bool
	xf          []float32 // the float input of batched q8/q4 products ([nf, len(xf)/nf]), or nil
	nf          int
}

// reset forgets the forms held (their buffers stay for the next input).
func (q *preparedInput) reset() { q.has8, q.has16, q.hasBF, q.xf, q.nf = false, false, false, nil, 0 }

// prepare quantizes x ([n, w.Cols]) into the form w multiplies, unless q already holds it. An
// f32 weight needs none, nor an fp16 one without AMX, nor a batch of q8 or q4 products
// (kernels.Q8FloatActs, kernels.Q4FloatActs), which reads x. Where amx says so, fp16 and q8
// weights share one split of x into bfloat16 parts.
func (q *preparedInput) prepare(w *weight, x []float32, n int) {
	switch {
	case (w.DType == dtype.F16 || w.DType == dtype.Q8) && q.amx != nil && q.amx(n):
		if !q.hasBF {
			q.bf.Split(q.pool, x, n, w.Cols)
			q.hasBF = true
		}
	case w.DType == dtype.F16: // the float kernels read x
	case w.DType == dtype.Q8 && kernels.Q8FloatActs(n), w.DType == dtype.Q4 && kernels.Q4FloatActs(n):
		q.xf, q.nf = x[:n*w.Cols], n
	case w.DType == dtype.Q8 && !q.has16:
		q.a16.Quantize(x, n, w.Cols)
		q.has16 = true
	case w.DType == dtype.Q4 && !q.has8:
		q.a8.Quantize(x, n, w.Cols)
		q.has8 = true
	}
}

// hasAMX reports whether prepare has split the input for the AMX product.
func (q *preparedInput) hasAMX() bool { return q.hasBF }

// reads reports whether w's products read q's prepared input (weight.mulActs) rather than the
// float input (weight.matVec, weight.matMul): every quantized weight, and an fp16 weight when
// prepare split the input for AMX.
func (q *preparedInput) reads(w *weight) bool {
	return w.quantized() || w.DType == dtype.F16 && q.hasBF && q.bf.Cols() == w.Cols
}
