package runtime

import (
	"math"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/runtime/kernels"
)

// invFreq returns the rotary inverse frequencies of c (over its rotary dimensions), as
// transformers' rope utilities compute them in float32: the default frequencies, then the
// config's scaling.
func invFreq(c *arch.Config) []float32 {
	inv := kernels.DefaultInvFreq(c.RopeTheta, c.RotaryDim())
	if rs := c.RopeScaling; rs != nil {
		switch rs.Type {
		case arch.RopeLlama3:
			llama3Scale(inv, rs)
		case arch.RopeLinear: // inv_freq /= factor
			for i := range inv {
				inv[i] /= float32(rs.Factor)
			}
		}
	}
	return inv
}

// llama3Scale applies Llama 3.1's frequency scaling (transformers'
// _compute_llama3_parameters): wavelengths longer than original/low_freq_factor are divided by
// factor, shorter than original/high_freq_factor kept, and the band between interpolated
// smoothly. Every step is a float32 tensor operation there, with the Python scalars taken as
// float32; so here.
func llama3Scale(inv []float32, rs *arch.RopeScaling) {
	factor := float32(rs.Factor)
	low := float32(rs.LowFreqFactor)
	old := float32(rs.OriginalMaxPositionEmbeddings)
	band := float32(rs.HighFreqFactor - rs.LowFreqFactor)
	lowWavelen := float32(float64(rs.OriginalMaxPositionEmbeddings) / rs.LowFreqFactor)
	highWavelen := float32(float64(rs.OriginalMaxPositionEmbeddings) / rs.HighFreqFactor)
	twoPi := float32(2 * math.Pi)
	for i, f := range inv {
		// torch computes scalar / tensor as reciprocal(tensor) * scalar; the explicit
		// conversions keep Go from fusing a multiply and an add into one rounding.
		wavelen := float32(float32(1/f) * twoPi)
		scaled := f
		if wavelen > lowWavelen {
			scaled = f / factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) { // the medium band
			smooth := float32(float32(float32(1/wavelen)*old)-low) / band
			a := float32(float32((1-smooth)*scaled) / factor)
			b := float32(smooth * scaled)
			scaled = a + b
		}
		inv[i] = scaled
	}
}
