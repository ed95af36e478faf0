//go:build !amd64 || noasm

package quant

// hasQ4Asm is false: there is no assembly for the q4 fit on this platform, and the Go kernels
// do all the work.
const hasQ4Asm = false

func (f *q4Fit) sweepSumsAsm(is *[12]float64, n int) { panic("quant: no q4 assembly") }
func (f *q4Fit) evalErrsAsm(n int)                   { panic("quant: no q4 assembly") }
