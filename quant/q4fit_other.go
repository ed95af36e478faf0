//go:build !amd64 || noasm

package quant

// hasQ4Asm is false: there is no assembly for the q4 fit on this platform, and the Go kernels
// do all the work.
const hasQ4Asm = false

// hasQ8Asm is false: the q8 row quantizer is Go on this platform.
const hasQ8Asm = false

func (f *q4Fit) sweepSumsAsm(is *[12]float64, n int)  { panic("quant: no q4 assembly") }
func (f *q4Fit) evalErrsAsm(n int)                    { panic("quant: no q4 assembly") }
func maxAbsBitsAVX2(w []float32) uint32               { panic("quant: no q8 assembly") }
func q8RowAVX2(q []int8, w []float32, r float32) bool { panic("quant: no q8 assembly") }
