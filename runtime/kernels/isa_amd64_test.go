//go:build !noasm

package kernels

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// saveISA records the kernel switches LimitISA turns off and returns a func that restores them.
func saveISA() (restore func()) {
	saved2, saved512, savedVNNI, savedBW, savedAMX := useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX
	return func() {
		useAVX2, useAVX512, useVNNI, useAVX512BW, useAMX = saved2, saved512, savedVNNI, savedBW, savedAMX
	}
}

// TestVEXKernelsUseLowRegisters checks the generated assembly: only the
// AVX-512 kernels may name vector registers 16-31, which need EVEX encodings
// (an AVX2 kernel given one by the register allocator would assemble to an
// AVX-512 instruction and fault on an AVX2-only CPU).
func TestVEXKernelsUseLowRegisters(t *testing.T) {
	src, err := os.ReadFile("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	high := regexp.MustCompile(`\b[XYZ](1[6-9]|2[0-9]|3[01])\b`)
	evex := regexp.MustCompile(`^·(gemmF(16|32)ZT|gemmQ[48]ZT|gemmNNZ|matVecF(16|32)AVX512|q[48]VNNI)`)
	fn := ""
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "TEXT ") {
			fn = strings.Fields(line)[1]
			continue
		}
		if high.MatchString(line) && !evex.MatchString(fn) {
			t.Errorf("%s uses a register only EVEX can encode: %s", fn, strings.TrimSpace(line))
		}
	}
}

// TestMatVecBothPrefetchForms runs the GEMV tests on both forms of the AVX-512 GEMV, with
// software prefetch and without (zPrefetch picks one per CPU vendor), so the form this CPU does
// not pick is checked too. (Without AVX-512 both runs test the AVX2 GEMV.)
func TestMatVecBothPrefetchForms(t *testing.T) {
	saved := zPrefetch
	defer func() { zPrefetch = saved }()
	for _, pf := range []bool{true, false} {
		zPrefetch = pf
		name := "prefetch"
		if !pf {
			name = "no-prefetch"
		}
		t.Run(name+"/MatVec", TestMatVec)
		t.Run(name+"/OneTokenIsMatVec", TestMatMulOneTokenIsMatVec)
	}
}

// TestCPUVendor: CPUID's vendor string is 12 printable characters, and only AMD's and Hygon's
// turn the GEMV's software prefetch off.
func TestCPUVendor(t *testing.T) {
	v := cpuVendor()
	if len(v) != 12 || strings.TrimFunc(v, func(r rune) bool { return r > ' ' && r < 0x7f }) != "" {
		t.Fatalf("cpuVendor() = %q", v)
	}
	for vendor, zen := range map[string]bool{"AuthenticAMD": true, "HygonGenuine": true, "GenuineIntel": false, "CentaurHauls": false} {
		if zenVendor(vendor) != zen {
			t.Errorf("zenVendor(%q) = %v", vendor, !zen)
		}
	}
	t.Logf("vendor %s: GEMV software prefetch %v", v, zPrefetch)
}

// BenchmarkMatVecPrefetch streams the 24 fp16 matrices of BenchmarkDecodeBound through both
// forms of the GEMV on one thread, in turn (the order swapped every iteration), and reports
// each one's rate: the measurement behind zPrefetch. "pages=4k" holds the weights in 4 KiB
// pages, as a bundle's mapping of the page cache is; "pages=huge" in transparent huge pages.
// The prefetches gain in both on a 16-core Xeon and cost in both on a 2-core AMD Zen 5, where
// runs are noisy (docs/performance.md, "Decisions backed by measurement"). Without AVX-512 both
// forms are the AVX2 GEMV.
func BenchmarkMatVecPrefetch(b *testing.B) {
	huge, _ := benchWeights(benchStream, false)
	small := make([][]uint16, len(huge))
	for i, w := range huge {
		small[i] = append([]uint16(nil), w...)
	}
	x, y := benchVec(benchCols), make([]float32, benchRows)
	saved := zPrefetch
	defer func() { zPrefetch = saved }()
	for _, pages := range []struct {
		name string
		w    [][]uint16
	}{{"4k", small}, {"huge", huge}} {
		b.Run("pages="+pages.name, func(b *testing.B) {
			var t [2]float64 // seconds with the prefetches, without
			for iter := 0; b.Loop(); iter++ {
				for k := range 2 {
					i := (k + iter) % 2
					zPrefetch = i == 0
					t0 := time.Now()
					for _, w := range pages.w {
						MatVecF16(y, w, x, benchRows, benchCols)
					}
					t[i] += time.Since(t0).Seconds()
				}
			}
			bytes := float64(b.N) * float64(benchStream*2*benchRows*benchCols) / 1e9
			b.ReportMetric(bytes/t[0], "prefetch-GB/s")
			b.ReportMetric(bytes/t[1], "none-GB/s")
		})
	}
}
