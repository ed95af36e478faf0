//go:build noasm || !amd64

package kernels

// No AMX off amd64 (or in a -tags noasm build): the Go twins do all of MatMulF16AMX and MatMulQ8AMX.

func amxAvailable() bool { return false }

func amxHardware() bool { return false }

func amxTiles(k *amxCall) {
	k.check()
	amxTilesGo(k)
}

func packF16TileFast(dst []uint16, stride int, low bool, w []uint16, ldw, chunks int) (int, bool) {
	return 0, false
}

func packQ8TileFast(dst []uint16, stride int, w []int8, ldw, chunks int) int { return 0 }

func splitRowFast(dst []uint16, x []float32) int { return 0 }

func scaleRowsFast(y []float32, ldy int, s []float32, n int) int { return 0 }
