//go:build (!amd64 && !arm64) || noasm

package kernels

// spinPause is one iteration's pause of a spin-wait loop; Go has no portable spin hint.
func spinPause() {}
