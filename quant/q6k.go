package quant

import (
	"encoding/binary"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// q6k super-block offsets: ql[128] low 4 bits, qh[64] high 2 bits, scales[16] int8, fp16 d.
const (
	q6kQH     = 128
	q6kScales = 192
	q6kD      = 208
)

// q6kLevel returns the 6-bit code (0..63) of weight i (0..255) of a q6k super-block: for the
// half h = i/128 and k = (i%128)/32, l = i%32, the low 4 bits are the low (k = 0, 1) or high
// (k = 2, 3) nibble of ql[64h + l + 32(k%2)], the high 2 bits are bits 2k, 2k+1 of qh[32h + l].
func q6kLevel(blk []byte, i int) int32 {
	h, k, l := i/128, (i%128)/32, i%32
	lo := blk[64*h+l+32*(k%2)] >> (4 * (k / 2)) & 15
	hi := blk[q6kQH+32*h+l] >> (2 * k) & 3
	return int32(lo) | int32(hi)<<4
}

// DequantizeRowQ6K writes the len(dst) weights (a multiple of SuperBlock) of the q6k row src:
// w = (d·scale)·(q − 32) in float32, sub-block i/16 giving weight i its scale (every product is
// exact, so this is the value every reader computes).
func DequantizeRowQ6K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/SuperBlock; b++ {
		blk := src[b*Q6KBlockBytes : (b+1)*Q6KBlockBytes]
		y := dst[b*SuperBlock : (b+1)*SuperBlock]
		d := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk[q6kD:]))
		for h := 0; h < 2; h++ {
			ql, qh := blk[64*h:64*h+64], blk[q6kQH+32*h:q6kQH+32*h+32]
			for l := 0; l < 32; l++ {
				q := [4]int32{
					int32(ql[l]&15) | int32(qh[l]&3)<<4,
					int32(ql[l+32]&15) | int32(qh[l]>>2&3)<<4,
					int32(ql[l]>>4) | int32(qh[l]>>4&3)<<4,
					int32(ql[l+32]>>4) | int32(qh[l]>>6)<<4,
				}
				for k := 0; k < 4; k++ {
					i := 128*h + 32*k + l
					a := d * float32(int8(blk[q6kScales+i/16]))
					y[i] = a * float32(q[k]-32)
				}
			}
		}
	}
}

// DequantizeQ6K writes the rows x cols weights of the q6k matrix data into dst.
func DequantizeQ6K(dst []float32, data []byte, rows, cols int) error {
	if err := checkK("DequantizeQ6K", dtype.Q6K, len(data), len(dst), 0, rows, cols, false); err != nil {
		return err
	}
	rb := cols / SuperBlock * Q6KBlockBytes
	for r := 0; r < rows; r++ {
		DequantizeRowQ6K(dst[r*cols:(r+1)*cols], data[r*rb:(r+1)*rb])
	}
	return nil
}

// QuantizeRowQ6K quantizes the row w (a multiple of SuperBlock weights) into dst (len(w)/256
// super-blocks of Q6KBlockBytes), with the column importances imp (nil: none) as
// QuantizeRowQ4K takes them.
func QuantizeRowQ6K(dst []byte, w, imp []float32) error {
	if err := checkK("QuantizeRowQ6K", dtype.Q6K, len(dst), len(w), len(imp), 1, len(w), imp != nil); err != nil {
		return err
	}
	if err := checkFinite(w); err != nil {
		return err
	}
	if err := checkImportance(imp); err != nil {
		return err
	}
	var s kScratch
	quantizeRowQ6K(dst, w, imp, &s)
	return nil
}

// QuantizeQ6KFrom is QuantizeQ4KFrom for q6k.
func QuantizeQ6KFrom(data, src []byte, st dtype.DType, rows, cols int, imp []float32) error {
	return quantizeKFrom("QuantizeQ6KFrom", dtype.Q6K, data, src, st, rows, cols, imp, quantizeRowQ6K)
}

// quantizeRowQ6K quantizes a checked row.
func quantizeRowQ6K(dst []byte, w, imp []float32, s *kScratch) {
	for b := 0; b < len(w)/SuperBlock; b++ {
		var ib []float32
		if imp != nil {
			ib = imp[b*SuperBlock : (b+1)*SuperBlock]
		}
		quantizeBlockQ6K(dst[b*Q6KBlockBytes:(b+1)*Q6KBlockBytes], w[b*SuperBlock:(b+1)*SuperBlock], ib, s)
	}
}

// quantizeBlockQ6K quantizes one super-block of 256 weights x into blk:
//
//  1. each sub-block of 16 gets the symmetric scale of least weighted error (fitSymmetric);
//  2. the sixteen scales become int8 levels of a common fp16 step d, chosen among
//     |s|_max/(127.5 − 0.5k) to minimise Σ_j (Σ w l²)_j (s_j − d·sc_j)²;
//  3. every weight takes its nearest level under the stored values;
//  4. d is refitted by weighted least squares to those levels, rounded to fp16, the levels
//     redrawn, twice, each step kept only when it lowers the error as stored.
func quantizeBlockQ6K(blk []byte, x, imp []float32, s *kScratch) {
	w := s.w[:]
	kWeights(w, x, imp)
	var scales [16]float32
	var cs [16]float64
	for j := 0; j < 16; j++ {
		scales[j], cs[j] = fitSymmetric(x[16*j:16*j+16], w[16*j:16*j+16], 32)
	}
	var sc [16]int8
	d := q6kFitScales(&scales, &cs, &sc)
	best := q6kLevels(s.l[:], x, w, d, &sc)
	for it := 0; it < 2 && d != 0; it++ {
		nd, ok := q6kRefit(s.l[:], x, w, &sc, d)
		if !ok || nd == d {
			break
		}
		e := q6kLevels(s.t[:], x, w, nd, &sc)
		if !(e < best) {
			break
		}
		best, d = e, nd
		s.l = s.t
	}

	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			q := func(k int) uint8 { return uint8(int32(s.l[128*h+32*k+l]) + 32) }
			blk[64*h+l] = q(0)&15 | (q(2)&15)<<4
			blk[64*h+l+32] = q(1)&15 | (q(3)&15)<<4
			blk[q6kQH+32*h+l] = q(0)>>4 | (q(1)>>4)<<2 | (q(2)>>4)<<4 | (q(3)>>4)<<6
		}
	}
	for j := range sc {
		blk[q6kScales+j] = uint8(sc[j])
	}
	binary.LittleEndian.PutUint16(blk[q6kD:], d)
}

// q6kFitScales picks the fp16 step d and the int8 levels sc of the sixteen sub-block scales, whose
// errors cost cs each, and returns d's bits (0 for an all-zero block).
func q6kFitScales(scales *[16]float32, cs *[16]float64, sc *[16]int8) uint16 {
	var sm float32 // the scale of largest magnitude
	for _, v := range scales {
		if abs32(v) > abs32(sm) {
			sm = v
		}
	}
	*sc = [16]int8{}
	if sm == 0 {
		return 0
	}
	best, bd := -1.0, uint16(0)
	var tmp [16]int8
	for k := 0; k <= 8; k++ {
		// The largest scale takes the level −128 (or near it): the sign of d is the opposite
		// of its sign, so that the int8 range's extra negative step is used.
		d := half.F32ToF16Scalar(-sm / (128 - 0.5*float32(k)))
		df := half.F16ToF32Scalar(d)
		if !(abs32(df) > 0) || abs32(df) > 65504 {
			continue
		}
		var e float64
		for j, v := range scales {
			l := roundLevel(v/df, -128, 127)
			tmp[j] = int8(l)
			r := float64(v - df*float32(l)) // df·l is exact
			e += float64(cs[j] * r * r)
		}
		if best < 0 || e < best {
			best, bd, *sc = e, d, tmp
		}
	}
	return bd
}

// q6kLevels sets every weight's level (−32..31) to the nearest under the stored d and sub-block
// scales, and returns the weighted squared error of the result as the readers dequantize it.
func q6kLevels(l []int8, x, w []float32, d uint16, sc *[16]int8) float64 {
	df := half.F16ToF32Scalar(d)
	var e float64
	for j := 0; j < 16; j++ {
		a := df * float32(sc[j]) // exact
		for i := 16 * j; i < 16*j+16; i++ {
			q := int32(0)
			if a != 0 {
				q = roundLevel(x[i]/a, -32, 31)
			}
			l[i] = int8(q)
			r := a*float32(q) - x[i] // a·q is exact
			e += float64(w[i]*r) * float64(r)
		}
	}
	return e
}

// q6kRefit returns the fp16 step d minimising Σ w (d·sc·l − x)² for the given levels, keeping
// the sign of the current step d0; ok is false when there is none.
func q6kRefit(l []int8, x, w []float32, sc *[16]int8, d0 uint16) (uint16, bool) {
	var suu, sux float64
	for j := 0; j < 16; j++ {
		for i := 16 * j; i < 16*j+16; i++ {
			u := float64(int32(sc[j]) * int32(l[i])) // at most 4096 in magnitude
			wi := float64(w[i])
			suu += wi * u * u // exact: 24 + 26 bits
			sux += float64(wi * float64(x[i]) * u)
		}
	}
	if !(suu > 0) {
		return 0, false
	}
	d := float32(sux / suu)
	h := half.F32ToF16Scalar(d)
	if h&0x7fff == 0 || h&0x7fff >= 0x7c00 || (h^d0)&0x8000 != 0 {
		return 0, false
	}
	return h, true
}
