package kernels

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// The AMX prefill products (MatMulF16AMX, and MatMulQ8AMX for int8 codes, which are bfloat16
// exactly and so take the path of bfloat16-exact fp16 weights): Intel's Advanced Matrix
// Extensions multiply tiles of bfloat16 into float32 accumulators, ~16x the multiply-adds per
// cycle of AVX-512 on a Sapphire Rapids core. bfloat16 keeps 8 significant bits, so rather
// than round the operands (which would lose the float32 result Hugging Face computes), each
// operand is split into bfloat16 parts that add up to it exactly:
//
//   - an activation x (float32, 24 bits) = hi + mid + lo, each the top 8 significant bits of
//     what is left (splitBF16x3Go);
//   - an fp16 weight w (11 bits) = high + low, high its top 8 bits and low the 3 below; the
//     weights of a bfloat16 checkpoint (most of them) have low = 0, and a block of weights
//     whose remainders are all zero skips those products.
//
// Every product of two bfloat16 parts is exact in float32, so x·w = Σ parts' products exactly
// and the only rounding is the float32 accumulation, as in the float32 GEMM: 3 tile products
// per step (5 when a block has remainders), which drop only low·lo, below 2^-24 of x·w. The
// results differ from the AVX-512 kernel's by accumulation order, like those of any two float32
// kernels here (the tests hold both to the same kind of bound).
//
// Layout: see BF16Acts (activations) and packF16TileGo (weights). TDPBF16PS computes
// C[m][n] += A[m][2kp]·B[kp][2n] + A[m][2kp+1]·B[kp][2n+1] for 16x16 float32 C, A 16 rows of 32
// bfloat16 (tokens by columns) and B 16 rows of 16 column pairs (pairs of columns by weight
// rows).

const (
	amxTile     = 16                 // rows of a tile: tokens of A and C, column pairs of B
	amxChunk    = 32                 // bfloat16 values in a tile row: the columns one product consumes
	amxElems    = amxTile * amxChunk // values in one A or B tile (1 KiB)
	amxParts    = 3                  // hi, mid, lo
	amxRowTiles = 3                  // weight row tiles of one kernel call
	amxRows     = amxRowTiles * amxTile
	amxStep     = amxParts * amxElems // values per chunk of a token tile's parts, and of a packed weight block
	amxKBlock   = 8                   // chunks per pass over a token block: its activations (384 KiB for 256 tokens) stay in L2, the block's packed weights (24 KiB) in L1
	amxTokBlock = 256                 // tokens per pass: each packed weight block serves up to this many
	amxFlagAcc  = 1                   // amxCall flag: add to C instead of setting it
	amxFlagLow  = 2                   // amxCall flag: the block has weight remainders
)

// amxMinTokens is the fewest tokens for which UseAMX picks MatMulF16AMX: each weight block is
// packed once per call, whatever the tokens, so on few tokens MatMulF16 is as fast (measured on
// a Sapphire Rapids core: even with it at 32 tokens, 1.3-3x faster at 128).
const amxMinTokens = 48

// UseAMX reports whether a product of fp16 weights or q8 codes with n tokens should run on
// AMX here (BF16Acts.Split, then MatMulF16AMX or MatMulQ8AMX): the CPU has AMX-BF16, the
// operating system lets the process use it, and n is at least amxMinTokens.
func UseAMX(n int) bool { return n >= amxMinTokens && amxAvailable() }

// amxResidentInput is the largest split input (BF16Acts, 6 bytes a value) taken to stay in a
// core's L2 from one work item to the next: Sapphire Rapids has 2 MiB a core, and the items'
// packed weights and results need room too.
const amxResidentInput = 1 << 20

// AMXItemRows returns the weight rows of one work item, at most maxRows, when a product of rows
// weight rows of cols columns with n tokens is split over threads for MatMulF16AMX or
// MatMulQ8AMX: whole
// 16-row tiles, at least 32 rows. Every item reads the whole split input, 6·n·cols bytes. Where
// that stays in L2 (Qwen2.5-0.5B's 896-column projections at 128 tokens: 0.7 MB) items are a
// quarter of a thread's share, so that a slow core delays the product by little; where it
// does not (its 4864-column down projection: 3.7 MB) each thread takes one item, so that the
// input streams from L3 once per thread rather than once per item.
func AMXItemRows(rows, cols, n, threads, maxRows int) int {
	items := 4 * max(threads, 1)
	if amxParts*2*n*cols > amxResidentInput {
		items = max(threads, 1)
	}
	g := ((rows+items-1)/items + amxTile - 1) &^ (amxTile - 1)
	return min(max(g, 2*amxTile), maxRows)
}

// amxImpl names the kernel of fp16 or q8 products of amxMinTokens or more tokens: AMX where
// available, else the GEMM named gemm.
func amxImpl(gemm string) string {
	return amxImplFor(gemm, amxHardware(), amxAvailable())
}

// amxImplFor is amxImpl for a CPU with AMX-BF16 or not (hardware) whose system grants the
// tile state or not (permitted): where the CPU has AMX and the system refuses it, the name says
// so, since doctor's feature line lists amx-bf16 all the same.
func amxImplFor(gemm string, hardware, permitted bool) string {
	switch {
	case hardware && permitted:
		return fmt.Sprintf("amx-bf16 16x%d (activations as 3 bf16 parts)", amxRows)
	case hardware:
		return gemm + " (the CPU has AMX; the system refused the tile state: Linux 5.16 or later grants it)"
	}
	return gemm
}

// BF16Acts is an input of n tokens split into the three bfloat16 parts the AMX product reads,
// built once per input by Split and then only read, so work items on different weight rows
// share it (like Int8Acts). The zero value is ready to use.
//
// Layout: tokens in tiles of 16 (the last padded with zero rows), columns in chunks of 32 (the
// last padded with zeros); token tile tt's chunk c holds the hi, mid and lo A tiles, 16 rows
// of 32 values each, at parts[(tt*chunks+c)*amxStep:], one after the other. A kernel call then
// reads 3 KiB per chunk, in order.
type BF16Acts struct {
	parts   []uint16
	n, cols int
	chunks  int
	x       []float32        // the input, during Split
	splitFn func(lo, hi int) // splitRows, made once so that Split allocates nothing
}

// Tokens returns the number of tokens split.
func (a *BF16Acts) Tokens() int { return a.n }

// Cols returns the columns of each token.
func (a *BF16Acts) Cols() int { return a.cols }

// Split splits x ([n, cols]) into its bfloat16 parts, over the pool's threads when p is not
// nil. It reuses the buffers of the previous input.
func (a *BF16Acts) Split(p *Pool, x []float32, n, cols int) {
	if n < 0 || cols < 0 || len(x) < n*cols {
		panic(fmt.Sprintf("kernels.BF16Acts.Split: %d values for %d tokens of %d columns", len(x), n, cols))
	}
	a.n, a.cols = n, cols
	a.chunks = (cols + amxChunk - 1) / amxChunk
	tpad := (n + amxTile - 1) / amxTile * amxTile
	size := tpad * a.chunks * amxChunk * amxParts
	if cap(a.parts) < size {
		a.parts = make([]uint16, size)
	}
	a.parts = a.parts[:size]
	a.x = x
	if a.splitFn == nil {
		a.splitFn = a.splitRows
	}
	if p == nil || n*cols < 1<<16 {
		a.splitRows(0, tpad)
	} else {
		p.Parallel(tpad, max(1, (1<<15)/max(cols, 1)), a.splitFn)
	}
	a.x = nil
}

// splitRows splits token rows [lo, hi); rows at or past n are padding and become zero.
func (a *BF16Acts) splitRows(lo, hi int) {
	for t := lo; t < hi; t++ {
		dst := a.parts[(t/amxTile)*a.chunks*amxStep+(t%amxTile)*amxChunk:]
		if t >= a.n {
			splitRowGo(dst, nil, a.chunks)
			continue
		}
		x := a.x[t*a.cols : (t+1)*a.cols]
		if c := splitRowFast(dst, x); c < a.chunks {
			splitRowGo(dst[c*amxStep:], x[c*amxChunk:], a.chunks-c)
		}
	}
}

// splitRowGo splits one token's values x into chunks chunks of its A-tile rows at dst (chunk
// c's hi, mid and lo rows at dst[c*amxStep:], +amxElems, +2*amxElems), zero past len(x).
func splitRowGo(dst []uint16, x []float32, chunks int) {
	var v [amxChunk]float32
	for c := 0; c < chunks; c++ {
		clear(v[:])
		if c*amxChunk < len(x) {
			copy(v[:], x[c*amxChunk:])
		}
		d := dst[c*amxStep:]
		splitBF16x3Go(d[:amxChunk], d[amxElems:amxElems+amxChunk], d[2*amxElems:2*amxElems+amxChunk], v[:])
	}
}

// splitBF16x3Go writes x = hi + mid + lo, each part a bfloat16 (the top 16 bits of a float32
// whose low 16 are zero): hi keeps x's sign, exponent and top 7 mantissa bits (rounded toward
// zero, so x - hi is exact in float32 and has at most 16 significant bits), mid the same of
// x - hi, and lo is the rest, at most 8 significant bits and so a bfloat16 exactly.
func splitBF16x3Go(hi, mid, lo []uint16, x []float32) {
	for i, v := range x {
		h := bf16High(v)
		r := v - h
		m := bf16High(r)
		l := r - m
		hi[i] = uint16(math.Float32bits(h) >> 16)
		mid[i] = uint16(math.Float32bits(m) >> 16)
		lo[i] = uint16(math.Float32bits(l) >> 16)
	}
}

// bf16High returns v rounded toward zero to a bfloat16 (its low 16 bits cleared): v - bf16High(v)
// is exact in float32.
func bf16High(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ 0xffff) }

// packTileGo writes chunks B tiles of a block of up to 16 weight rows, chunk c's at
// dst[c*stride:]: tile row kp holds, for weight rows n = 0..15, columns 2kp and 2kp+1 of the
// chunk, each as val(n, k), the bfloat16 of row n, column k from the block's start; rows past
// rows and columns past cols are zero. The Go twins of both packings share this layout.
func packTileGo(dst []uint16, stride, rows, cols, chunks int, val func(n, k int) uint16) {
	for c := 0; c < chunks; c++ {
		tile := dst[c*stride : c*stride+amxElems]
		for kp := 0; kp < amxTile; kp++ {
			for n := 0; n < amxTile; n++ {
				for e := 0; e < 2; e++ {
					var v uint16
					if k := c*amxChunk + 2*kp + e; n < rows && k < cols {
						v = val(n, k)
					}
					tile[kp*amxChunk+2*n+e] = v
				}
			}
		}
	}
}

// packF16TileGo packs weight rows [0, rows) of w (rows <= 16, row i at w[i*ldw:], cols
// columns from w's start) for chunks chunks of 32 columns into B tiles (packTileGo's layout),
// chunk c's at dst[c*stride:]: the high bfloat16 parts, or with low the remainders. It reports
// whether any remainder is nonzero.
func packF16TileGo(dst []uint16, stride int, low bool, w []uint16, ldw, rows, cols, chunks int) bool {
	tab, nonzero := f16Table(), false
	packTileGo(dst, stride, rows, cols, chunks, func(n, k int) uint16 {
		v := tab[w[n*ldw+k]]
		hv := bf16High(v)
		l := uint16(math.Float32bits(v-hv) >> 16)
		nonzero = nonzero || l != 0
		if low {
			return l
		}
		return uint16(math.Float32bits(hv) >> 16)
	})
	return nonzero
}

// packF16Block packs weight rows [0, rows) (0 < rows <= amxRows; row i at w[i*ldw:]) for
// chunks chunks of 32 columns from w's start (cols valid columns) into hi (and, when any is
// nonzero, their remainders into lo), chunk c's tiles at [c*amxStep:], one per 16 rows (the
// last padded with zero rows): the kernel reads only those (amxCall.rowTiles), so the tiles of
// a block of fewer than 48 rows past them are left as they were. It reports whether the
// remainders are needed.
func packF16Block(hi, lo, w []uint16, ldw, rows, cols, chunks int) bool {
	pack := func(dst []uint16, low bool) bool {
		nonzero := false
		for j := 0; j < (rows+amxTile-1)/amxTile; j++ {
			tr := min(amxTile, rows-j*amxTile)
			wj := w[min(len(w), j*amxTile*ldw):]
			done := 0
			if tr == amxTile {
				d, nz := packF16TileFast(dst[j*amxElems:], amxStep, low, wj, ldw, min(chunks, cols/amxChunk))
				done, nonzero = d, nonzero || nz
			}
			if done < chunks {
				nonzero = packF16TileGo(dst[done*amxStep+j*amxElems:], amxStep, low, wj[min(len(wj), done*amxChunk):], ldw, tr, cols-done*amxChunk, chunks-done) || nonzero
			}
		}
		return nonzero
	}
	if !pack(hi, false) {
		return false
	}
	pack(lo, true)
	return true
}

// packQ8TileGo packs int8 codes as packF16TileGo packs the high parts of fp16 weights, each
// code as its bfloat16 (exact: a code has at most 8 significant bits).
func packQ8TileGo(dst []uint16, stride int, w []int8, ldw, rows, cols, chunks int) {
	packTileGo(dst, stride, rows, cols, chunks, func(n, k int) uint16 {
		return uint16(math.Float32bits(float32(w[n*ldw+k])) >> 16)
	})
}

// packQ8Block packs rows [0, rows) of int8 codes (0 < rows <= amxRows; row i at w[i*ldw:]) for
// chunks chunks of 32 columns (cols valid columns) into hi, as packF16Block packs fp16
// weights (codes have no remainders).
func packQ8Block(hi []uint16, w []int8, ldw, rows, cols, chunks int) {
	for j := 0; j < (rows+amxTile-1)/amxTile; j++ {
		tr := min(amxTile, rows-j*amxTile)
		wj := w[min(len(w), j*amxTile*ldw):]
		done := 0
		if tr == amxTile {
			done = packQ8TileFast(hi[j*amxElems:], amxStep, wj, ldw, min(chunks, cols/amxChunk))
		}
		if done < chunks {
			packQ8TileGo(hi[done*amxStep+j*amxElems:], amxStep, wj[min(len(wj), done*amxChunk):], ldw, tr, cols-done*amxChunk, chunks-done)
		}
	}
}

// amxCall is one call of the AMX micro-kernel (amxTilesAsm, twin amxTilesGo): for each of tiles
// token tiles, C[16 tokens, 16*rowTiles weight rows] over chunks chunks of 32 columns. Offsets
// and strides count elements.
type amxCall struct {
	c        []float32 // token tile i's C row m at c[(16*i+m)*ldc:], 16*rowTiles values
	ldc      int
	a        []uint16 // token tile i's A tiles at a[i*lda:], amxStep per chunk
	lda      int
	b, blo   []uint16 // the packed weight block: high parts and remainders, amxStep per chunk
	chunks   int
	tiles    int
	rowTiles int // 1 to amxRowTiles
	flags    int // amxFlagAcc, amxFlagLow
	// pf is where the assembly prefetches weight rows while it multiplies, one row per chunk
	// step, pfStride bytes apart (nextBlock): an address only, which a prefetch may read past
	// the end of without fault. The twin ignores both.
	pf, pfStride uintptr
}

// check panics unless every tile the call reads or writes lies inside its slices (the
// assembly trusts the offsets).
func (k *amxCall) check() {
	need := k.chunks * amxStep
	w := k.rowTiles * amxTile
	if k.chunks <= 0 || k.tiles <= 0 || k.rowTiles < 1 || k.rowTiles > amxRowTiles || k.ldc < w || len(k.c) < (k.tiles*amxTile-1)*k.ldc+w ||
		len(k.a) < (k.tiles-1)*k.lda+need || len(k.b) < need || k.flags&amxFlagLow != 0 && len(k.blo) < need {
		panic(fmt.Sprintf("kernels: AMX call out of bounds: c %d (ldc %d), a %d (lda %d), b %d, blo %d, %d chunks, %d tiles of %d row tiles, flags %d",
			len(k.c), k.ldc, len(k.a), k.lda, len(k.b), len(k.blo), k.chunks, k.tiles, k.rowTiles, k.flags))
	}
}

// amxTilesGo is the pure-Go twin of the AMX micro-kernel: the same tile products in the same
// order (amxPasses), each as tdpbf16psGo models TDPBF16PS.
func amxTilesGo(k *amxCall) {
	for i := 0; i < k.tiles; i++ {
		c := k.c[i*amxTile*k.ldc:]
		var all [amxRowTiles][amxTile * amxTile]float32
		acc := all[:k.rowTiles]
		if k.flags&amxFlagAcc != 0 {
			for j := range acc {
				for m := 0; m < amxTile; m++ {
					copy(acc[j][m*amxTile:(m+1)*amxTile], c[m*k.ldc+j*amxTile:])
				}
			}
		}
		for ch := 0; ch < k.chunks; ch++ {
			a := k.a[i*k.lda+ch*amxStep:]
			for _, pass := range amxPasses {
				if pass.low && k.flags&amxFlagLow == 0 {
					continue
				}
				b := k.b[ch*amxStep:]
				if pass.low {
					b = k.blo[ch*amxStep:]
				}
				for j := range acc {
					tdpbf16psGo(&acc[j], a[pass.part*amxElems:], b[j*amxElems:])
				}
			}
		}
		for j := range acc {
			for m := 0; m < amxTile; m++ {
				copy(c[m*k.ldc+j*amxTile:][:amxTile], acc[j][m*amxTile:(m+1)*amxTile])
			}
		}
	}
}

// amxPasses is the order of the products of one chunk: the weights' high parts times the
// activations' hi, mid and lo, then the remainders times hi and mid (low·lo, below 2^-24 of
// the product, is left out).
var amxPasses = [...]struct {
	part int
	low  bool
}{{0, false}, {1, false}, {2, false}, {0, true}, {1, true}}

// tdpbf16psGo is TDPBF16PS as Intel's manual defines it, on one 16x16 tile (A and B rows 32
// values apart): for each token row m, pair row kp and column n, acc[m][n] += a[m][2kp]·b[kp][2n],
// then += a[m][2kp+1]·b[kp][2n+1], each sum rounded to float32 (nearest even); bfloat16 denormal
// inputs count as zero and denormal results are flushed to zero.
func tdpbf16psGo(acc *[amxTile * amxTile]float32, a, b []uint16) {
	for m := 0; m < amxTile; m++ {
		row := acc[m*amxTile : (m+1)*amxTile]
		for kp := 0; kp < amxTile; kp++ {
			a0, a1 := bf16DAZ(a[m*amxChunk+2*kp]), bf16DAZ(a[m*amxChunk+2*kp+1])
			bp := b[kp*amxChunk : (kp+1)*amxChunk]
			for n := range row {
				s := ftz(row[n] + float32(a0*bf16DAZ(bp[2*n])))
				row[n] = ftz(s + float32(a1*bf16DAZ(bp[2*n+1])))
			}
		}
	}
}

// bf16DAZ widens a bfloat16, denormals to zero.
func bf16DAZ(h uint16) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return math.Float32frombits(uint32(h) << 16)
}

// ftz flushes a float32 denormal to zero (keeping its sign).
func ftz(v float32) float32 {
	if b := math.Float32bits(v); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return v
}

// amxScratch is one goroutine's packed weight block and edge tiles while it runs MatMulF16AMX.
type amxScratch struct {
	hi, lo [amxKBlock * amxStep]uint16
	c      [amxTokBlock * amxRows]float32
	scale  []float32 // MatMulQ8AMX's row scales in float32
}

var amxScratchPool = sync.Pool{New: func() any { return new(amxScratch) }}

// MatMulF16AMX computes y[t*ldy + r] = w[r]·x[t] for the a.Tokens() tokens of a (x split by
// BF16Acts.Split) and the rows weight rows of w (fp16, row-major, a.Cols() columns): the
// prefill product of MatMulF16 on AMX tiles, exact in the parts (see the top of amx.go). It
// runs on the calling goroutine; on a machine without AMX it runs the Go twin of the tile
// kernel (correct, and slow: UseAMX says when to call it).
func MatMulF16AMX(y []float32, ldy int, a *BF16Acts, w []uint16, rows int) {
	n, cols := a.n, a.cols
	if rows < 0 || len(w) < rows*cols || ldy < rows || n > 0 && rows > 0 && len(y) < (n-1)*ldy+rows {
		panic(fmt.Sprintf("kernels.MatMulF16AMX: y %d (ldy %d), w %d for %d rows of %d columns, %d tokens", len(y), ldy, len(w), rows, cols, n))
	}
	matMulAMX(y, ldy, a, &amxWeights{f16: w, rows: rows, cols: cols})
}

// MatMulQ8AMX computes y[t*ldy + r] = scale[r] · (w[r]·x[t]) for the a.Tokens() tokens of a
// (x split by BF16Acts.Split) and the rows rows of int8 codes w (row-major, a.Cols() columns)
// with their fp16 scales: MatMulQ8Float's product on AMX tiles. An int8 code is a bfloat16
// exactly, so every product of parts is exact, as for bfloat16-exact fp16 weights (3 tile
// products per step), and the row's scale multiplies the float32 sum once, as in
// MatMulQ8Float. It runs on the calling goroutine (the Go twin of the tile kernel without AMX).
func MatMulQ8AMX(y []float32, ldy int, a *BF16Acts, w []int8, scale []uint16, rows int) {
	n, cols := a.n, a.cols
	if rows < 0 || len(w) < rows*cols || len(scale) < rows || ldy < rows || n > 0 && rows > 0 && len(y) < (n-1)*ldy+rows {
		panic(fmt.Sprintf("kernels.MatMulQ8AMX: y %d (ldy %d), w %d and %d scales for %d rows of %d columns, %d tokens", len(y), ldy, len(w), len(scale), rows, cols, n))
	}
	matMulAMX(y, ldy, a, &amxWeights{q8: w, scale: scale[:rows], rows: rows, cols: cols})
}

// scaleRows sets y[t*ldy + r] *= s[r] for t < n, r < len(s): the assembly takes whole 16-value
// blocks where AVX512BW is (the same IEEE products), Go the rest.
func scaleRows(y []float32, ldy int, s []float32, n int) {
	done := scaleRowsFast(y, ldy, s, n)
	for t := 0; t < n; t++ {
		yt := y[t*ldy : t*ldy+len(s)]
		for r := done; r < len(s); r++ {
			yt[r] *= s[r]
		}
	}
}

// amxWeights is the weight matrix of an AMX product: fp16 weights or int8 codes, rows x cols,
// row-major. It packs blocks of it into B tiles and gives the addresses to prefetch.
type amxWeights struct {
	f16        []uint16
	q8         []int8
	scale      []uint16 // the q8 rows' scales, applied to the finished sums
	rows, cols int
}

// pack packs rows [r0, r0+nr) for chunks chunks from chunk c0 into hi (and their remainders
// into lo), as packF16Block does, and reports whether the remainders are needed (never for
// int8 codes).
func (w *amxWeights) pack(hi, lo []uint16, r0, c0, nr, chunks int) bool {
	off, cols := r0*w.cols+c0*amxChunk, w.cols-c0*amxChunk
	if w.q8 != nil {
		packQ8Block(hi, w.q8[off:], w.cols, nr, cols, chunks)
		return false
	}
	return packF16Block(hi, lo, w.f16[off:], w.cols, nr, cols, chunks)
}

// at returns the address of weight (r, c), and the bytes between rows.
func (w *amxWeights) at(r, c int) (addr, stride uintptr) {
	if w.q8 != nil {
		return uintptr(unsafe.Pointer(&w.q8[r*w.cols+c])), uintptr(w.cols)
	}
	return uintptr(unsafe.Pointer(&w.f16[r*w.cols+c])), uintptr(w.cols) * 2
}

// matMulAMX is the driver of MatMulF16AMX and MatMulQ8AMX: y[t*ldy + r] = w[r]·x[t], times
// the row's scale for q8 codes.
//
// Loop order: tokens in blocks of amxTokBlock, columns in blocks of amxKBlock chunks, then
// weight blocks of up to 48 rows, each packed once per pass and swept by every 16-token tile of
// the block in one kernel call, which meanwhile prefetches the next block (nextBlock); from the
// second column block on the kernel adds to y. Edge tiles (a last tile of fewer than 16
// tokens, a block whose rows are not a multiple of 16) go through scratch.
func matMulAMX(y []float32, ldy int, a *BF16Acts, w *amxWeights) {
	n, cols, rows := a.n, a.cols, w.rows
	if n == 0 || rows == 0 {
		return
	}
	if cols == 0 {
		zeroRows(y, n, ldy, 0, rows)
		return
	}
	s := amxScratchPool.Get().(*amxScratch)
	defer amxScratchPool.Put(s)
	for tb := 0; tb < n; tb += amxTokBlock {
		nt := min(amxTokBlock, n-tb)
		full := nt / amxTile
		for c0 := 0; c0 < a.chunks; c0 += amxKBlock {
			k := amxCall{lda: a.chunks * amxStep, b: s.hi[:], blo: s.lo[:], chunks: min(amxKBlock, a.chunks-c0)}
			if c0 > 0 {
				k.flags |= amxFlagAcc
			}
			for r0 := 0; r0 < rows; r0 += amxRows {
				nr := min(amxRows, rows-r0)
				k.flags &^= amxFlagLow
				if w.pack(s.hi[:], s.lo[:], r0, c0, nr, k.chunks) {
					k.flags |= amxFlagLow
				}
				k.rowTiles = (nr + amxTile - 1) / amxTile
				if amxPrefetch {
					k.pf, k.pfStride = nextBlock(w, r0, c0, a.chunks, tb+amxTokBlock < n)
				} else {
					k.pf, _ = w.at(0, 0)
					k.pfStride = 0
				}
				t0 := tb
				if nr%amxTile == 0 && full > 0 {
					k.a = a.parts[(tb/amxTile*a.chunks+c0)*amxStep:]
					k.c, k.ldc, k.tiles = y[tb*ldy+r0:], ldy, full
					amxTiles(&k)
					t0 += full * amxTile
				}
				if t0 < tb+nt {
					s.edge(&k, y, ldy, a, c0, t0, tb+nt, r0, nr)
				}
			}
		}
	}
	if w.scale != nil {
		if cap(s.scale) < rows {
			s.scale = make([]float32, rows)
		}
		sf, tab := s.scale[:rows], f16Table()
		for r := range sf {
			sf[r] = tab[w.scale[r]]
		}
		scaleRows(y, ldy, sf, n)
	}
}

// amxPrefetch makes matMulAMX prefetch each next weight block (nextBlock); benchmarks switch it
// off to measure what that saves.
var amxPrefetch = true

// nextBlock returns the address of the weight block matMulAMX packs after the one at rows r0,
// chunk c0 of w: the next amxRows rows, else the first rows of the next column block, else
// (with moreTokens) of the first column block again, and the bytes between its rows; stride 0
// (w's start) when none follows. The tile kernel prefetches it while it multiplies, so that
// packing finds it in L2: a pack from memory took 2-4x as long as from cache on a Sapphire
// Rapids core (BenchmarkAMXPack, pack/48x256/bf16/cold), as long as the tile products of 128
// tokens at the unit's peak.
func nextBlock(w *amxWeights, r0, c0, chunks int, moreTokens bool) (pf, stride uintptr) {
	r0 += amxRows
	if r0 >= w.rows {
		r0, c0 = 0, c0+amxKBlock
		if c0 >= chunks {
			if !moreTokens {
				pf, _ = w.at(0, 0)
				return pf, 0
			}
			c0 = 0
		}
	}
	return w.at(r0, c0*amxChunk)
}

// edge runs the kernel call k for tokens [t0, t1) (whole tiles but the last) and weight rows
// [r0, r0+nr) of y through s.c, which holds the partial sums y has when k adds to them.
func (s *amxScratch) edge(k *amxCall, y []float32, ldy int, a *BF16Acts, c0, t0, t1, r0, nr int) {
	if k.flags&amxFlagAcc != 0 {
		for t := t0; t < t1; t++ {
			copy(s.c[(t-t0)*amxRows:(t-t0)*amxRows+nr], y[t*ldy+r0:])
		}
	}
	k.a = a.parts[(t0/amxTile*a.chunks+c0)*amxStep:]
	k.c, k.ldc, k.tiles = s.c[:], amxRows, (t1-t0+amxTile-1)/amxTile
	amxTiles(k)
	for t := t0; t < t1; t++ {
		copy(y[t*ldy+r0:t*ldy+r0+nr], s.c[(t-t0)*amxRows:])
	}
}
