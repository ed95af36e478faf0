//go:build !noasm

package kernels

import "golang.org/x/sys/cpu"

// useAVX512BW selects the assembly that splits activations and packs weights for the AMX
// product (VPERMT2W on words needs AVX512BW). It runs wherever AVX-512 does, AMX or not, so
// tests check it against its Go twin on any AVX-512 machine.
var useAVX512BW = useAVX512 && cpu.X86.HasAVX512BW

// useAMX selects the AMX tile kernel: the CPU has AMX-TILE and AMX-BF16 (Sapphire Rapids and
// later Xeons) and the operating system lets this process use the tiles (amxPermitted). Tests
// switch it off to run the Go twin.
var useAMX = useAVX512BW && cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16

// amxConfig is the tile configuration of amxTilesAsm (palette 1): all eight tiles 16 rows of
// 64 bytes.
var amxConfig = func() (c [64]byte) {
	c[0] = 1 // palette
	for i := 0; i < 8; i++ {
		c[16+2*i] = 64 // bytes per row of tile i
		c[48+i] = 16   // rows of tile i
	}
	return c
}()

//go:noescape
func amxTilesAsm(cfg *byte, c *float32, ldc uintptr, a *uint16, lda uintptr, b *uint16, blo *uint16, chunks int, tiles int, rowTiles int, flags int, pf uintptr, pfStride uintptr)

//go:noescape
func amxPackAsm(dst *uint16, w *uint16, ldw uintptr, chunks int, stride uintptr, low int) (nonzero uint32)

//go:noescape
func amxPackQ8Asm(dst *uint16, w *int8, ldw uintptr, chunks int, stride uintptr)

//go:noescape
func amxScaleRowsAsm(y *float32, ldy uintptr, s *float32, n int, blocks int)

//go:noescape
func amxSplitAsm(dst *uint16, x *float32, chunks int)

// amxAvailable reports whether the AMX kernel runs here (see useAMX).
func amxAvailable() bool { return useAMX && amxPermitted() }

// amxHardware reports whether the CPU has what the AMX kernels need, granted or not.
func amxHardware() bool { return useAMX }

// amxTiles runs one micro-kernel call: the assembly where AMX is available, else the twin.
func amxTiles(k *amxCall) {
	k.check()
	if !amxAvailable() {
		amxTilesGo(k)
		return
	}
	blo := k.blo
	if k.flags&amxFlagLow == 0 {
		blo = k.b // not read
	}
	amxTilesAsm(&amxConfig[0], &k.c[0], uintptr(k.ldc)*4, &k.a[0], uintptr(k.lda)*2, &k.b[0], &blo[0], k.chunks, k.tiles, k.rowTiles, k.flags, k.pf, k.pfStride)
}

// packF16TileFast packs chunks 32-column chunks of 16 full weight rows (row i at w[i*ldw:])
// with the assembly, as packF16TileGo does, and returns how many chunks it did (none without
// AVX512BW) and whether any remainder is nonzero.
func packF16TileFast(dst []uint16, stride int, low bool, w []uint16, ldw, chunks int) (int, bool) {
	if !useAVX512BW || chunks == 0 {
		return 0, false
	}
	if len(dst) < (chunks-1)*stride+amxElems || len(w) < (amxTile-1)*ldw+chunks*amxChunk {
		panic("kernels: packF16TileFast: short buffers")
	}
	l := 0
	if low {
		l = 1
	}
	return chunks, amxPackAsm(&dst[0], &w[0], uintptr(ldw)*2, chunks, uintptr(stride)*2, l) != 0
}

// packQ8TileFast packs chunks 32-column chunks of 16 full rows of int8 codes (row i at
// w[i*ldw:]) with the assembly, as packQ8TileGo does, and returns how many chunks it did (none
// without AVX512BW).
func packQ8TileFast(dst []uint16, stride int, w []int8, ldw, chunks int) int {
	if !useAVX512BW || chunks == 0 {
		return 0
	}
	if len(dst) < (chunks-1)*stride+amxElems || len(w) < (amxTile-1)*ldw+chunks*amxChunk {
		panic("kernels: packQ8TileFast: short buffers")
	}
	amxPackQ8Asm(&dst[0], &w[0], uintptr(ldw), chunks, uintptr(stride)*2)
	return chunks
}

// splitRowFast splits the whole 32-value chunks of one token's x into its A-tile rows at dst
// with the assembly (see splitRowGo) and returns how many chunks it did.
func splitRowFast(dst []uint16, x []float32) int {
	chunks := len(x) / amxChunk
	if !useAVX512BW || chunks == 0 {
		return 0
	}
	_ = dst[(chunks-1)*amxStep+2*amxElems+amxChunk-1]
	amxSplitAsm(&dst[0], &x[0], chunks)
	return chunks
}

// scaleRowsFast multiplies the first len(s) &^ 15 values of each of n rows of y (ldy apart) by
// s with the assembly, as scaleRows does, and returns how many values of each row it did (none
// without AVX512BW).
func scaleRowsFast(y []float32, ldy int, s []float32, n int) int {
	blocks := len(s) / 16
	if !useAVX512BW || blocks == 0 || n == 0 {
		return 0
	}
	_ = y[(n-1)*ldy+blocks*16-1]
	amxScaleRowsAsm(&y[0], uintptr(ldy)*4, &s[0], n, blocks)
	return blocks * 16
}
