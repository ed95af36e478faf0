//go:build !amd64 || noasm

package quant

// Without assembly the fit and the q8 rows are Go; these stand in for the amd64 kernels, which
// are never called here.

const q4Best = q4Go

const hasQ8Asm = false

func q4PrologueAVX2(w []float32, wd []float64) (lo, hi float32) { panic("quant: no asm") }
func q4SweepAVX2(wd []float64, lo, rng float64, num, is *[16]float64, sums *[54]float64) float64 {
	panic("quant: no asm")
}
func q4SweepAVX512(wd []float64, lo, rng float64, num, is *[16]float64, sums *[54]float64) float64 {
	panic("quant: no asm")
}
func q4LevelsAVX2(wd []float64, inv, z float64, data []byte) { panic("quant: no asm") }
func q4PrepAVX2(sums *[54]float64, direct *[4]float64, sw, n, invn, lim float64, inv, z *[16]float64, s, zf *[16]float32, bits *[16]uint32) (valid, risky uint32) {
	panic("quant: no asm")
}
func q4EvalAVX2(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64, sums *[54]float64) uint32 {
	panic("quant: no asm")
}
func q4EvalAVX512(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64, sums *[54]float64) uint32 {
	panic("quant: no asm")
}
func q4Eval1AVX2(wd []float64, inv, z *[16]float64, s, zf *[16]float32, errs *[16]float64) {
	panic("quant: no asm")
}
func maxAbsBitsAVX2(w []float32) uint32               { panic("quant: no asm") }
func q8RowAVX2(q []int8, w []float32, r float32) bool { panic("quant: no asm") }
