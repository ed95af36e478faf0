//go:build amd64 && !noasm

package kernels

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cpuRate(f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f()
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		t0 := threadCPU()
		n := 0
		for threadCPU()-t0 < 100*time.Millisecond {
			f()
			n++
		}
		r := float64(n) / (threadCPU() - t0).Seconds()
		best = max(best, r)
	}
	return best
}

func TestExpGemm(t *testing.T) {
	w16, w32 := benchWeights(1, true)
	x := benchVec(128 * 4864)
	y := make([]float32, 128*4864)
	for _, sh := range [][3]int{{4864, 896, 128}, {896, 4864, 128}, {48, 896, 4}} {
		r := cpuRate(func() { MatMulF16(y, x, w16[0], sh[2], sh[0], sh[1]) })
		fmt.Printf("F16 %dx%d n=%d: %.1f GFLOPS/cpu-s\n", sh[0], sh[1], sh[2], r*2*float64(sh[2]*sh[0]*sh[1])/1e9)
		r = cpuRate(func() { MatMulF32(y, x, w32[0], sh[2], sh[0], sh[1]) })
		fmt.Printf("F32 %dx%d n=%d: %.1f GFLOPS/cpu-s\n", sh[0], sh[1], sh[2], r*2*float64(sh[2]*sh[0]*sh[1])/1e9)
	}
}

func TestExpPeak(t *testing.T) {
	w16, w32 := benchWeights(1, true)
	x := benchVec(128 * 4864)
	y := make([]float32, 128*4864)
	for _, cols := range []int{256, 896, 2048} {
		r := cpuRate(func() {
			for i := 0; i < 100; i++ {
				gemmF16T4R3(y, 4864, x, w16[0], cols, cols)
			}
		})
		fmt.Printf("F16 tile cols=%d: %.1f GFLOPS/cpu-s\n", cols, 100*r*2*float64(12*cols)/1e9)
		r = cpuRate(func() {
			for i := 0; i < 100; i++ {
				gemmF32T4R3(y, 4864, x, w32[0], cols, cols)
			}
		})
		fmt.Printf("F32 tile cols=%d: %.1f GFLOPS/cpu-s\n", cols, 100*r*2*float64(12*cols)/1e9)
	}
}
