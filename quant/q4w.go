package quant

import (
	"fmt"

	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/half"
)

// QuantizeRowQ4Weighted is QuantizeRowQ4 with one importance per input column (imp, len(w)
// values, as QuantizeRowQ4K takes them): per group, the stored scale and offset are those of
// least weighted squared error (kWeights' weights) among QuantizeRowQ4's own fit, a weighted
// sweep (fitAffine) and a weighted least-squares refit of the sweep's levels, each judged with
// its fp16-rounded values. The layout is q4's; only the choice differs. It is the fallback of
// the q4k recipe for rows that are not a whole number of super-blocks.
func QuantizeRowQ4Weighted(data []byte, scale, offset []uint16, w []float32, group int, imp []float32) error {
	cols := len(w)
	if err := CheckGroup(cols, group); err != nil {
		return err
	}
	if len(data) != cols/2 || len(scale) != cols/group || len(offset) != cols/group {
		return fmt.Errorf("quant: QuantizeRowQ4Weighted: sections of %d, %d, %d for %d weights in groups of %d, want %d, %d, %d",
			len(data), len(scale), len(offset), cols, group, cols/2, cols/group, cols/group)
	}
	if imp != nil && len(imp) != cols {
		return fmt.Errorf("quant: QuantizeRowQ4Weighted: %d importances for %d inputs", len(imp), cols)
	}
	if err := checkFinite(w); err != nil {
		return err
	}
	if err := checkImportance(imp); err != nil {
		return err
	}
	var f q4Fit
	var s kScratch
	quantizeRowQ4Weighted(data, scale, offset, w, group, imp, &f, &s)
	return nil
}

// QuantizeQ4WeightedFrom is QuantizeQ4From with column importances (see QuantizeRowQ4Weighted).
func QuantizeQ4WeightedFrom(data []byte, scale, offset []uint16, src []byte, dt dtype.DType, rows, cols, group int, imp []float32) error {
	if err := checkQ4("QuantizeQ4WeightedFrom", len(data), len(scale), len(offset), rows, cols, group); err != nil {
		return err
	}
	if !dt.IsFloat() {
		return fmt.Errorf("quant: QuantizeQ4WeightedFrom: source dtype %v; expected f32, f16 or bf16", dt)
	}
	sz := dt.Size()
	if len(src) != rows*cols*sz {
		return fmt.Errorf("quant: QuantizeQ4WeightedFrom: %d bytes of %v for %dx%d", len(src), dt, rows, cols)
	}
	if imp != nil && len(imp) != cols {
		return fmt.Errorf("quant: QuantizeQ4WeightedFrom: %d importances for %d inputs", len(imp), cols)
	}
	if err := checkImportance(imp); err != nil {
		return err
	}
	row := make([]float32, cols)
	var f q4Fit
	var s kScratch
	ng := cols / group
	for r := 0; r < rows; r++ {
		if err := Widen(row, src[r*cols*sz:(r+1)*cols*sz], dt); err != nil {
			return err
		}
		if err := checkFinite(row); err != nil {
			return fmt.Errorf("row %d: %w", r, err)
		}
		quantizeRowQ4Weighted(data[r*cols/2:(r+1)*cols/2], scale[r*ng:(r+1)*ng], offset[r*ng:(r+1)*ng], row, group, imp, &f, &s)
	}
	return nil
}

// quantizeRowQ4Weighted quantizes a checked row.
func quantizeRowQ4Weighted(data []byte, scale, offset []uint16, w []float32, group int, imp []float32, f *q4Fit, s *kScratch) {
	for g := 0; g < len(w)/group; g++ {
		x := w[g*group : (g+1)*group]
		var ig []float32
		if imp != nil {
			ig = imp[g*group : (g+1)*group]
		}
		scale[g], offset[g] = fitGroupQ4Weighted(data[g*group/2:(g+1)*group/2], x, ig, f, s)
	}
}

// fitGroupQ4Weighted chooses one group's scale and offset and writes its packed levels.
func fitGroupQ4Weighted(data []byte, x, imp []float32, f *q4Fit, s *kScratch) (scale, offset uint16) {
	n := len(x)
	wt := s.w[:n]
	kWeights(wt, x, imp)
	var lv [128]uint8
	q := lv[:n]

	// The unweighted fit's choice, judged by the weighted error.
	scale, offset = f.fitGroup(data, x, fitBest)
	for i := range q {
		q[i] = data[i/2] >> (4 * (i & 1)) & 15
	}
	best := errQ4(q, x, wt, scale, offset)

	var cand [128]uint8
	c := cand[:n]
	try := func(a, b float64) bool {
		if !(a > 0) {
			return false
		}
		sc, off, sv, zv := roundCandidate(a, b)
		if !(sv > 0) || sv > 65504 || zv != zv || abs32(zv) > 65504 {
			return false
		}
		levelsQ4(c, x, sv, zv)
		if e := errQ4(c, x, wt, sc, off); e < best {
			best, scale, offset = e, sc, off
			copy(q, c)
			return true
		}
		return false
	}
	a, b, _, _ := fitAffine(x, wt, 15, false)
	try(float64(a), float64(b))
	// A weighted least-squares refit of the winner's levels.
	var sw, sl, sl2, sx, slx float64
	for i, v := range x {
		wi, l := float64(wt[i]), float64(q[i])
		sw += wi
		sl += wi * l
		sl2 += wi * l * l
		wx := wi * float64(v) // exact
		sx += wx
		slx += wx * l // exact: 48 + 4 bits
	}
	if det := float64(sw*sl2) - float64(sl*sl); det > 0 {
		try((float64(sw*slx)-float64(sx*sl))/det, (float64(sl2*sx)-float64(sl*slx))/det)
	}
	for i := 0; i < n; i += 2 {
		data[i/2] = q[i] | q[i+1]<<4
	}
	return scale, offset
}

// errQ4 returns Σ w (x̂ − x)² of levels q under the stored scale and offset, x̂ dequantized as
// DequantizeQ4 does.
func errQ4(q []uint8, x, w []float32, scale, offset uint16) float64 {
	s, z := half.F16ToF32Scalar(scale), half.F16ToF32Scalar(offset)
	var e float64
	for i, v := range x {
		r := float32(s*(float32(q[i])-z)) - v // rounded as DequantizeQ4 rounds, never fused
		e += float64(w[i]*r) * float64(r)
	}
	return e
}
