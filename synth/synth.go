package synth

import (
	"math"

	"github.com/anepack/anepack/arch"
)

const (
	gamma = 0x9E3779B97F4A7C15
	mix1  = 0xBF58476D1CE4E5B9
	mix2  = 0x94D049BB133111EB
)

// FNV1a64 is the 64-bit FNV-1a hash of s's UTF-8 bytes.
func FNV1a64(s string) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001B3
	}
	return h
}

// scaler maps v in [-1, 1) to a tensor's value by its role (the SYNTH-1 role table).
type scaler struct {
	mul, add float64
}

// scalerFor returns the role table's rule for t, from the architecture's description of it:
//
//	one    1 + 0.1*v                  norm weights used as w; Qwen3.5's dt_bias
//	zero   0.1*v                      biases; norm weights used as (1 + w); position embeddings
//	a_log  0.5*v                      Qwen3.5's A_log
//	embed  0.25*v                     token embeddings
//	linear v * sqrt(3 / in_features)  every other tensor of 2 or more dimensions, in_features
//	                                  being the product of all but the first (Qwen3.5's conv1d
//	                                  [C, 1, K] too; the role table's in_out rule for [in, out]
//	                                  weights is the same value)
func scalerFor(t arch.Tensor) scaler {
	switch {
	case t.Role == arch.RoleNorm && !t.PlusOne, t.Slot == arch.LinDtBias:
		return scaler{0.1, 1}
	case t.Slot == arch.LinALog:
		return scaler{0.5, 0}
	case t.Role == arch.RoleNorm || t.Role == arch.RoleBias || t.Slot == arch.PosEmbed:
		return scaler{0.1, 0}
	case t.Role == arch.RoleEmbedding:
		return scaler{0.25, 0}
	default:
		return scaler{math.Sqrt(3.0 / float64(arch.Elements(t.Shape[1:]))), 0}
	}
}

// apply computes the value exactly as numpy does it: 1.0 + 0.1*v for norms (add then), v*s otherwise.
func (s scaler) apply(v float64) float64 {
	if s.add != 0 {
		return s.add + s.mul*v
	}
	return v * s.mul
}

// BF16FromFloat32 rounds a float32 to bfloat16 bits with the SYNTH-1 rule (round to nearest even;
// NaN is not produced by the generator, so it is not special-cased).
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7FFF + ((b >> 16) & 1)) >> 16)
}

// fill writes elements [first, first+len(dst)/2) of tensor t as little-endian BF16 bytes.
func fill(dst []byte, t arch.Tensor, seed uint64, first int) {
	s0 := FNV1a64(t.Name) ^ seed
	sc := scalerFor(t)
	for k := 0; k+1 < len(dst); k += 2 {
		i := uint64(first + k/2)
		z := s0 + (i+1)*gamma
		z = (z ^ z>>30) * mix1
		z = (z ^ z>>27) * mix2
		z ^= z >> 31
		u := float64(z>>11) * (1.0 / 9007199254740992.0)
		v := sc.apply(2*u - 1)
		bf := BF16FromFloat32(float32(v))
		dst[k] = byte(bf)
		dst[k+1] = byte(bf >> 8)
	}
}
