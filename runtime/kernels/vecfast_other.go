//go:build (!amd64 && !arm64) || noasm

package kernels

// Without assembly for the vector helpers their fast paths do nothing and
// the Go code does all the work.

func sumFast(x []float32) (float32, int)                    { return 0, 0 }
func dotFast(x, y []float32) (float32, int)                 { return 0, 0 }
func swigluFast(dst, gate, up []float32) int                { return 0 }
func geluTanhFast(dst, x []float32) int                     { return 0 }
func geGLUFast(dst, gate, up []float32) int                 { return 0 }
func expSumFast(dst, x []float32, m float32) (float32, int) { return 0, 0 }
func axpyFast(y []float32, a float32, x []float32) int      { return 0 }
func maxFast(x []float32) (float32, int)                    { return 0, 0 }
func scaleFast(x []float32, a float32) int                  { return 0 }
