//go:build !noasm

package kernels

// saveISA records the kernel switches LimitISA turns off and returns a func that restores them.
func saveISA() (restore func()) {
	savedNEON, savedSDOT := useNEON, useSDOT
	return func() { useNEON, useSDOT = savedNEON, savedSDOT }
}
