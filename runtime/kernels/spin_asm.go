//go:build (amd64 || arm64) && !noasm

package kernels

// spinPause is one iteration's pause of a spin-wait loop: the CPU's spin hint (PAUSE, YIELD).
func spinPause()
