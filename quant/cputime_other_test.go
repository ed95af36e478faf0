//go:build !linux

package quant

import "testing"

// cpuLoop runs body b.N times (b.Loop); CPU time per op is measured on Linux only.
func cpuLoop(b *testing.B, body func()) {
	for b.Loop() {
		body()
	}
}
