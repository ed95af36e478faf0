package quant

import (
	"encoding/binary"
	"math"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// Q4KScaleMin returns sub-block j's (0..7) 6-bit scale and min from a q4k super-block's 12
// scale bytes: bytes 0-3 hold the scales of sub-blocks 0-3 in their low 6 bits, bytes 4-7 the
// mins of 0-3, bytes 8-11 the low 4 bits of scale (low nibble) and min (high nibble) of
// sub-blocks 4-7, whose top 2 bits are the top 2 bits of bytes 0-3 (scale) and 4-7 (min).
func Q4KScaleMin(scales []byte, j int) (sc, m uint8) {
	if j < 4 {
		return scales[j] & 63, scales[j+4] & 63
	}
	return scales[j+4]&0xf | (scales[j-4]>>6)<<4, scales[j+4]>>4 | (scales[j]>>6)<<4
}

// putQ4KScaleMins packs eight 6-bit scales and mins into 12 bytes as Q4KScaleMin reads them.
func putQ4KScaleMins(scales []byte, sc, m *[8]uint8) {
	for j := 0; j < 4; j++ {
		scales[j] = sc[j] | (sc[j+4]>>4)<<6
		scales[j+4] = m[j] | (m[j+4]>>4)<<6
		scales[j+8] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
}

// DequantizeRowQ4K writes the len(dst) weights (a multiple of SuperBlock) of the q4k row src:
// w = (d·scale)·q − dmin·min in float32 (every product is exact, so this is the value every
// reader computes).
func DequantizeRowQ4K(dst []float32, src []byte) {
	for b := 0; b < len(dst)/SuperBlock; b++ {
		blk := src[b*Q4KBlockBytes : (b+1)*Q4KBlockBytes]
		y := dst[b*SuperBlock : (b+1)*SuperBlock]
		d := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk))
		dmin := half.F16ToF32Scalar(binary.LittleEndian.Uint16(blk[2:]))
		qs := blk[16:]
		for c := 0; c < 4; c++ {
			sc0, m0 := Q4KScaleMin(blk[4:16], 2*c)
			sc1, m1 := Q4KScaleMin(blk[4:16], 2*c+1)
			a0, b0 := d*float32(sc0), dmin*float32(m0)
			a1, b1 := d*float32(sc1), dmin*float32(m1)
			for l := 0; l < 32; l++ {
				q := qs[32*c+l]
				y[64*c+l] = a0*float32(q&15) - b0
				y[64*c+32+l] = a1*float32(q>>4) - b1
			}
		}
	}
}

// DequantizeQ4K writes the rows x cols weights of the q4k matrix data into dst.
func DequantizeQ4K(dst []float32, data []byte, rows, cols int) error {
	if err := checkK("DequantizeQ4K", dtype.Q4K, len(data), len(dst), 0, rows, cols, false); err != nil {
		return err
	}
	rb := cols / SuperBlock * Q4KBlockBytes
	for r := 0; r < rows; r++ {
		DequantizeRowQ4K(dst[r*cols:(r+1)*cols], data[r*rb:(r+1)*rb])
	}
	return nil
}

// QuantizeRowQ4K quantizes the row w (a multiple of SuperBlock weights) into dst (len(w)/256
// super-blocks of Q4KBlockBytes). imp, when not nil, holds one importance per input (the mean
// square of the activations that multiply it): the fit then minimises the error of the layer's
// output rather than of the weights. See the package documentation for the fit.
func QuantizeRowQ4K(dst []byte, w, imp []float32) error {
	if err := checkK("QuantizeRowQ4K", dtype.Q4K, len(dst), len(w), len(imp), 1, len(w), imp != nil); err != nil {
		return err
	}
	if err := checkFinite(w); err != nil {
		return err
	}
	if err := checkImportance(imp); err != nil {
		return err
	}
	var s kScratch
	quantizeRowQ4K(dst, w, imp, &s)
	return nil
}

// QuantizeQ4KFrom quantizes the rows x cols matrix held as raw little-endian src of element type
// st (f32, f16 or bf16) into data (rows whole q4k rows), one row at a time, with the column
// importances imp (nil: none).
func QuantizeQ4KFrom(data, src []byte, st dtype.DType, rows, cols int, imp []float32) error {
	return quantizeKFrom("QuantizeQ4KFrom", dtype.Q4K, data, src, st, rows, cols, imp, quantizeRowQ4K)
}

// quantizeRowQ4K quantizes a checked row.
func quantizeRowQ4K(dst []byte, w, imp []float32, s *kScratch) {
	for b := 0; b < len(w)/SuperBlock; b++ {
		var ib []float32
		if imp != nil {
			ib = imp[b*SuperBlock : (b+1)*SuperBlock]
		}
		quantizeBlockQ4K(dst[b*Q4KBlockBytes:(b+1)*Q4KBlockBytes], w[b*SuperBlock:(b+1)*SuperBlock], ib, s)
	}
}

// quantizeBlockQ4K quantizes one super-block of 256 weights x into blk:
//
//  1. each sub-block of 32 gets the scale and min of least weighted error (fitAffine);
//  2. the eight scales, then the eight mins, become 6-bit levels of an fp16 step d (dmin),
//     each fitted to minimise the error it causes: a scale's error costs Σ w l², a min's Σ w;
//  3. every weight takes its nearest level under the stored values;
//  4. twice: d and dmin are refitted by weighted least squares to those levels (a 2x2 system
//     over the super-block), rounded to fp16 and the levels redrawn (up to twice, each step
//     kept only when it lowers the error as stored); then each sub-block's 6-bit scale and min
//     is nudged one step either way where that lowers its error (q4kNudge).
//
// On TestKQuantAccuracy's weights and activations, step 4 lowers the output error of the fit
// with importances by 10%.
func quantizeBlockQ4K(blk []byte, x, imp []float32, s *kScratch) {
	w := s.w[:]
	kWeights(w, x, imp)
	var scales, mins [8]float32
	var cs, cm [8]float64
	for j := 0; j < 8; j++ {
		sc, off, wl2, sw := fitAffine(x[32*j:32*j+32], w[32*j:32*j+32], 15, true)
		scales[j], mins[j], cs[j], cm[j] = sc, -off, wl2, sw
	}
	var ls, lm [8]uint8
	d := fitLevels(scales[:], cs[:], 63, ls[:])
	dmin := fitLevels(mins[:], cm[:], 63, lm[:])

	best := q4kLevels(s.l[:], x, w, d, dmin, &ls, &lm)
	for round := 0; round < 2; round++ {
		for it := 0; it < 2; it++ {
			nd, ndmin, ok := q4kRefit(s.l[:], x, w, &ls, &lm)
			if !ok || (nd == d && ndmin == dmin) {
				break
			}
			e := q4kLevels(s.t[:], x, w, nd, ndmin, &ls, &lm)
			if !(e < best) {
				break
			}
			best, d, dmin = e, nd, ndmin
			s.l = s.t
		}
		best = q4kNudge(s, x, w, d, dmin, &ls, &lm)
	}

	binary.LittleEndian.PutUint16(blk, d)
	binary.LittleEndian.PutUint16(blk[2:], dmin)
	putQ4KScaleMins(blk[4:16], &ls, &lm)
	qs := blk[16:Q4KBlockBytes]
	for c := 0; c < 4; c++ {
		for l := 0; l < 32; l++ {
			qs[32*c+l] = uint8(s.l[64*c+l]) | uint8(s.l[64*c+32+l])<<4
		}
	}
}

// q4kLevels sets every weight's level to the nearest under the stored d, dmin, scales and mins,
// and returns the weighted squared error of the result as the readers dequantize it.
func q4kLevels(l []int8, x, w []float32, d, dmin uint16, ls, lm *[8]uint8) float64 {
	df, dmf := half.F16ToF32Scalar(d), half.F16ToF32Scalar(dmin)
	var e float64
	for j := 0; j < 8; j++ {
		e += q4kSubLevels(l, x, w, j, df*float32(ls[j]), dmf*float32(lm[j]))
	}
	return e
}

// q4kSubLevels sets the levels of sub-block j under its effective scale a and min b (w = a·q − b)
// and returns the sub-block's weighted squared error.
func q4kSubLevels(l []int8, x, w []float32, j int, a, b float32) float64 {
	var inv float32
	if a > 0 {
		inv = 1 / a
	}
	var e float64
	for i := 32 * j; i < 32*j+32; i++ {
		// The nearest level: truncating v + 0.5 rounds v >= 0 (halves up).
		q := min(int32(max((x[i]+b)*inv, 0)+0.5), 15)
		l[i] = int8(q)
		r := a*float32(q) - b - x[i] // a·q is exact
		e += float64(w[i]*r) * float64(r)
	}
	return e
}

// q4kNudge tries each sub-block's 6-bit scale and min one step up and one down, keeping a
// change (and the sub-block's redrawn levels in s.l) when it lowers that sub-block's error, and
// returns the super-block's error.
func q4kNudge(s *kScratch, x, w []float32, d, dmin uint16, ls, lm *[8]uint8) float64 {
	df, dmf := half.F16ToF32Scalar(d), half.F16ToF32Scalar(dmin)
	var total float64
	for j := 0; j < 8; j++ {
		best := q4kSubLevels(s.l[:], x, w, j, df*float32(ls[j]), dmf*float32(lm[j]))
		for _, step := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			sc, m := int(ls[j])+step[0], int(lm[j])+step[1]
			if sc < 0 || sc > 63 || m < 0 || m > 63 {
				continue
			}
			if e := q4kSubLevels(s.t[:], x, w, j, df*float32(sc), dmf*float32(m)); e < best {
				best, ls[j], lm[j] = e, uint8(sc), uint8(m)
				copy(s.l[32*j:32*j+32], s.t[32*j:32*j+32])
			}
		}
		total += best
	}
	return total
}

// q4kRefit solves the weighted least squares x ≈ d·(scale·q) − dmin·min for d and dmin given
// the levels, and returns them rounded to fp16; ok is false when the system is singular or the
// solution is not a usable pair of steps.
func q4kRefit(l []int8, x, w []float32, ls, lm *[8]uint8) (d, dmin uint16, ok bool) {
	var saa, sab, sbb, sax, sbx float64
	for j := 0; j < 8; j++ {
		for i := 32 * j; i < 32*j+32; i++ {
			a := float64(int32(ls[j]) * int32(l[i])) // scale·q, at most 945
			b := float64(lm[j])
			wi := float64(w[i])
			saa += wi * a * a // exact: 24 + 20 bits
			sab += wi * a * b
			sbb += wi * b * b
			wx := wi * float64(x[i]) // exact
			sax += float64(wx * a)
			sbx += float64(wx * b)
		}
	}
	// minimise Σ w (D·a − M·b − x)²: [saa −sab; −sab sbb]·[D; M] = [sax; −sbx]
	det := float64(saa*sbb) - float64(sab*sab)
	if !(det > 0) {
		return 0, 0, false
	}
	D := (float64(sax*sbb) - float64(sab*sbx)) / det
	M := (float64(sab*sax) - float64(saa*sbx)) / det
	if !(D > 0) || !(M >= 0) || math.IsInf(D, 0) || math.IsInf(M, 0) {
		return 0, 0, false
	}
	return f16Positive(float32(D)), f16Positive(float32(M)), true
}
