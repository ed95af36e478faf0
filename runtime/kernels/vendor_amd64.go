//go:build !noasm

package kernels

// cpuid runs the CPUID instruction for leaf and sub-leaf sub.
//
//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// cpuVendor returns the CPU's vendor string (CPUID leaf 0): "GenuineIntel", "AuthenticAMD",
// "HygonGenuine" (Zen cores), ... x/sys/cpu reports features, not the vendor.
func cpuVendor() string {
	_, b, c, d := cpuid(0, 0)
	var s [12]byte
	for i := range 4 {
		s[i], s[4+i], s[8+i] = byte(b>>(8*i)), byte(d>>(8*i)), byte(c>>(8*i))
	}
	return string(s[:])
}

// zPrefetch selects the AVX-512 GEMV that prefetches its weights 4 KiB ahead (matVec*AVX512)
// over the one without software prefetch (matVec*AVX512NP). Intel's cores stream a GEMV's
// weights far slower without the prefetches (Sapphire Rapids: decode 12.4-13.5 against
// 17.7-19.4 tokens/s on 2 threads); on AMD's the hardware prefetchers keep up alone and the
// prefetches only cost (Zen 5: one thread decodes at 24.4-25.2 tokens/s without them, 21.4-22.9
// with; Zen 4, the other Zen with AVX-512, is assumed alike). The AVX2 GEMV and the quantized
// ones keep theirs everywhere: they gain from them on Zen too. docs/performance.md has the figures.
var zPrefetch = !zenVendor(cpuVendor())

// zenVendor reports whether vendor makes Zen cores.
func zenVendor(vendor string) bool { return vendor == "AuthenticAMD" || vendor == "HygonGenuine" }
