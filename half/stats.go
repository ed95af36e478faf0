package half

// Stats counts what a BF16 -> FP16 conversion lost. bfloat16 has 8 exponent
// bits and fp16 only 5, so very large and very small weights cannot survive
// unchanged; a packer reports these counts as a warning.
type Stats struct {
	// Overflow counts finite inputs whose magnitude rounded past 65504 and
	// became ±Inf.
	Overflow int
	// Underflow counts nonzero inputs that rounded to ±0 (|x| <= 2^-25).
	Underflow int
	// Subnormal counts results that are nonzero fp16 subnormals
	// (|x| < 2^-14), which keep fewer than 11 significant bits.
	Subnormal int
	// Inexact counts finite inputs whose fp16 value differs from the input:
	// every overflow and underflow, and subnormals that lost low bits.
	Inexact int
	// NaN counts NaN inputs; each is written as a quiet NaN.
	NaN int
}

// Add adds the counts of o to s, for totals over many tensors.
func (s *Stats) Add(o Stats) {
	s.Overflow += o.Overflow
	s.Underflow += o.Underflow
	s.Subnormal += o.Subnormal
	s.Inexact += o.Inexact
	s.NaN += o.NaN
}

// Lossy reports whether any value was changed by the conversion or was a NaN.
func (s Stats) Lossy() bool {
	return s.Inexact != 0 || s.NaN != 0 || s.Subnormal != 0
}
