package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/half"
)

// TestSplitBF16x3 checks that the three parts of every value add up to it exactly and that each
// is a bfloat16, then that a token row split by the assembly (where there is one) has the
// twin's bits, in the A-tile layout, zero-padded past the row's end.
func TestSplitBF16x3(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1.0 / 3, math.MaxFloat32, -math.MaxFloat32, 1e-30, 65504, 3.14159265}
	for _, n := range []int{0, 1, 31, 32, 33, 64, 100, 1000} {
		x := make([]float32, n)
		for i := range x {
			if i < len(special) {
				x[i] = special[i]
			} else {
				x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
			}
		}
		h, m, l := make([]uint16, n), make([]uint16, n), make([]uint16, n)
		splitBF16x3Go(h, m, l, x)
		for i, v := range x {
			sum := float64(bf16DAZ(h[i])) + float64(bf16DAZ(m[i])) + float64(bf16DAZ(l[i]))
			if sum != float64(v) {
				t.Fatalf("n=%d: %g split into %#04x %#04x %#04x, which add up to %g", n, v, h[i], m[i], l[i], sum)
			}
		}
		chunks := (n + amxChunk - 1) / amxChunk
		got, want := make([]uint16, chunks*amxStep), make([]uint16, chunks*amxStep)
		for i := range got {
			got[i], want[i] = 0xdead, 0xdead // rows of other tokens: untouched
		}
		if c := splitRowFast(got, x); c < chunks {
			splitRowGo(got[c*amxStep:], x[c*amxChunk:], chunks-c)
		}
		splitRowGo(want, x, chunks)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("n=%d: value %d (chunk %d, part %d, column %d): %#04x, twin %#04x", n, i, i/amxStep, i%amxStep/amxElems, i%amxElems, got[i], want[i])
			}
			col := i/amxStep*amxChunk + i%amxElems
			if p := i % amxStep / amxElems; i%amxElems < amxChunk && col < n && want[i] != [][]uint16{h, m, l}[p][col] {
				t.Fatalf("n=%d: column %d part %d is %#04x, want %#04x", n, col, p, want[i], [][]uint16{h, m, l}[p][col])
			}
		}
	}
}

// TestPackF16Tile checks the B-tile layout (columns 2kp and 2kp+1 of weight row n at tile row
// kp, pair n), that high part + remainder is the weight exactly, the zero padding of short
// tiles and chunks, the remainder flag (false for bfloat16-exact weights), and that the
// assembly packs the twin's bits.
func TestPackF16Tile(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, bf16Exact := range []bool{false, true} {
		for _, rows := range []int{48, 16, 1, 7, 33} {
			for _, cols := range []int{32, 31, 33, 64, 96, 200} {
				ldw := cols + 3
				w := make([]uint16, rows*ldw)
				for i := range w {
					v := float32(r.NormFloat64())
					if bf16Exact {
						v = bf16High(v)
					}
					w[i] = half.F32ToF16Scalar(v)
				}
				chunks := (cols + amxChunk - 1) / amxChunk
				hi, lo := make([]uint16, chunks*amxStep), make([]uint16, chunks*amxStep)
				for i := range hi {
					hi[i], lo[i] = 0xdead, 0xdead // every value the kernel reads must be written
				}
				nz := packF16Block(hi, lo, w, ldw, rows, cols, chunks)
				name := fmt.Sprintf("bf16=%v %dx%d", bf16Exact, rows, cols)
				if nz == bf16Exact {
					t.Errorf("%s: remainders reported nonzero=%v", name, nz)
				}
				gh, gl := make([]uint16, len(hi)), make([]uint16, len(lo))
				for j := 0; j < amxRowTiles; j++ {
					tr := min(amxTile, max(0, rows-j*amxTile))
					wj := w[min(len(w), j*amxTile*ldw):]
					packF16TileGo(gh[j*amxElems:], amxStep, false, wj, ldw, tr, cols, chunks)
					packF16TileGo(gl[j*amxElems:], amxStep, true, wj, ldw, tr, cols, chunks)
				}
				eachPacked(rows, chunks, func(i, row, k int) {
					want := float64(0)
					if row < rows && k < cols {
						want = float64(half.F16ToF32Scalar(w[row*ldw+k]))
					}
					l := 0.0
					if nz {
						l = float64(bf16DAZ(lo[i]))
					}
					if got := float64(bf16DAZ(hi[i])) + l; got != want {
						t.Fatalf("%s: row %d column %d packed as %#04x + %#04x = %g, want %g", name, row, k, hi[i], lo[i], got, want)
					}
					if hi[i] != gh[i] || nz && lo[i] != gl[i] {
						t.Fatalf("%s: row %d column %d: %#04x %#04x, twin %#04x %#04x", name, row, k, hi[i], lo[i], gh[i], gl[i])
					}
				})
			}
		}
	}
}

// eachPacked calls fn for every value of a packed block of rows weight rows and chunks chunks
// that the kernel reads (the row tiles holding rows), with its index in the block and the
// weight row and column it holds (past the weights: padding, which must be zero).
func eachPacked(rows, chunks int, fn func(i, row, k int)) {
	for c := 0; c < chunks; c++ {
		for j := 0; j < (rows+amxTile-1)/amxTile; j++ {
			for kp := 0; kp < amxTile; kp++ {
				for n := 0; n < amxTile; n++ {
					for e := 0; e < 2; e++ {
						fn(c*amxStep+j*amxElems+kp*amxChunk+2*n+e, j*amxTile+n, c*amxChunk+2*kp+e)
					}
				}
			}
		}
	}
}

// TestMatMulF16AMX checks the AMX product against the float64 reference on odd shapes: partial
// token tiles, weight tiles and column chunks, bfloat16-exact weights (no remainder products)
// and general fp16 ones, integer values (exact: bit for bit), and a y wider than the rows
// (columns outside must stay untouched). On a machine without AMX it runs the tile kernel's Go
// twin, the same driver.
func TestMatMulF16AMX(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, integers := range []bool{false, true} {
		for _, bf16Exact := range []bool{false, true} {
			for _, n := range []int{1, 15, 16, 17, 70, 150} {
				for _, rows := range []int{1, 15, 32, 48, 50, 80} {
					for _, cols := range []int{1, 31, 32, 33, 100, 300} {
						checkAMX(t, r, n, rows, cols, integers, bf16Exact)
					}
				}
			}
		}
	}
}

// FuzzMatMulF16AMX is TestMatMulF16AMX's check on fuzzed shapes and values.
func FuzzMatMulF16AMX(f *testing.F) {
	f.Add(uint64(1), uint8(20), uint8(50), uint16(300), false, true)
	f.Add(uint64(2), uint8(47), uint8(16), uint16(33), true, false)
	f.Fuzz(func(t *testing.T, seed uint64, n, rows uint8, cols uint16, integers, bf16Exact bool) {
		r := rand.New(rand.NewPCG(seed, 99))
		checkAMX(t, r, 1+int(n)%70, 1+int(rows)%100, 1+int(cols)%600, integers, bf16Exact)
	})
}

// checkAMX runs MatMulF16AMX on random n x cols activations and rows x cols weights (rounded to
// bfloat16 first when bf16Exact) into a NaN-filled y 3 columns wider than the rows, and holds
// it to the float64 reference: exact for integers, else within the bound of 5 rounded additions
// per column (amxPasses); the padding columns must stay NaN.
func checkAMX(t *testing.T, r *rand.Rand, n, rows, cols int, integers, bf16Exact bool) {
	t.Helper()
	m := newMats(r, n, rows, cols, integers)
	if bf16Exact {
		for i, v := range m.w32 {
			m.w32[i] = bf16High(v)
			m.w16[i] = half.F32ToF16Scalar(m.w32[i])
		}
	}
	ref, mag := refMatMul(m.x, m.w32, n, rows, cols)
	ldy := rows + 3
	y := make([]float32, n*ldy)
	for i := range y {
		y[i] = float32(math.NaN())
	}
	var a BF16Acts
	a.Split(nil, m.x, n, cols)
	MatMulF16AMX(y, ldy, &a, m.w16, rows)
	name := fmt.Sprintf("int=%v bf16=%v n=%d %dx%d", integers, bf16Exact, n, rows, cols)
	got := make([]float32, n*rows)
	for tk := 0; tk < n; tk++ {
		copy(got[tk*rows:(tk+1)*rows], y[tk*ldy:tk*ldy+rows])
		for j := rows; j < ldy; j++ {
			if v := y[tk*ldy+j]; v == v {
				t.Fatalf("%s: y[%d][%d] outside the rows was written (%g)", name, tk, j, v)
			}
		}
	}
	checkClose(t, "MatMulF16AMX "+name, got, ref, mag, len(amxPasses)*cols, integers)
}

// TestBF16ActsSplitPool checks that splitting over a pool gives the serial split's bits.
func TestBF16ActsSplitPool(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	r := rand.New(rand.NewPCG(17, 18))
	n, cols := 77, 1000
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var serial, pooled BF16Acts
	serial.Split(nil, x, n, cols)
	pooled.Split(p, x, n, cols)
	if pooled.Tokens() != n || pooled.Cols() != cols || len(pooled.parts) != len(serial.parts) {
		t.Fatalf("pooled split: %d tokens, %d columns, %d values; serial %d", pooled.Tokens(), pooled.Cols(), len(pooled.parts), len(serial.parts))
	}
	for i := range serial.parts {
		if serial.parts[i] != pooled.parts[i] {
			t.Fatalf("value %d: pooled %#04x, serial %#04x", i, pooled.parts[i], serial.parts[i])
		}
	}
}

// TestMatMulF16AMXBlocks covers the passes over token blocks (more than amxTokBlock tokens) and
// column blocks (more than amxKBlock chunks) on one shape.
func TestMatMulF16AMXBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	n, rows, cols := amxTokBlock+40, 40, amxKBlock*amxChunk+70
	m := newMats(r, n, rows, cols, false)
	ref, mag := refMatMul(m.x, m.w32, n, rows, cols)
	var a BF16Acts
	a.Split(nil, m.x, n, cols)
	MatMulF16AMX(m.y, rows, &a, m.w16, rows)
	checkClose(t, "MatMulF16AMX", m.y, ref, mag, len(amxPasses)*cols, false)
}

// TestAMXItemRows checks the work items of an AMX product: a quarter of a thread's share where
// the split input stays in L2, one item per thread where it does not, always whole 16-row
// tiles of at least 32 rows, never more than the bound.
func TestAMXItemRows(t *testing.T) {
	for _, c := range []struct {
		rows, cols, n, threads, bound, want int
	}{
		{4864, 896, 128, 2, 192, 192},     // gate/up: 0.7 MB of input, 608-row quarters bounded by scratch
		{4864, 896, 128, 2, 4864, 608},    // the same in place: a quarter of 2432
		{896, 4864, 128, 1, 896, 896},     // down: 3.7 MB, one item
		{896, 4864, 128, 2, 896, 448},     // one per thread
		{896, 4864, 128, 16, 896, 64},     // 56 rounded up to whole tiles
		{896, 4864, 128, 2, 192, 192},     // the bound wins
		{896, 4864, 16, 2, 896, 112},      // 0.47 MB at 16 tokens: quarters again
		{1152, 896, 128, 16, 1152, 32},    // 18 rows a quarter: at least 32
		{100, 896, 128, 1, 100, 32},       // 25 a quarter: at least 32
		{1000, 1 << 20, 1, 0, 1000, 1000}, // no threads counts as one
	} {
		if got := AMXItemRows(c.rows, c.cols, c.n, c.threads, c.bound); got != c.want {
			t.Errorf("AMXItemRows(%d rows, %d cols, %d tokens, %d threads, bound %d) = %d, want %d",
				c.rows, c.cols, c.n, c.threads, c.bound, got, c.want)
		}
	}
}

// TestPackQ8Tile checks the B tiles of int8 codes: each code as its bfloat16 value in
// packF16TileGo's layout, zero padding of short chunks, and the assembly's bits against the
// twin's.
func TestPackQ8Tile(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, rows := range []int{48, 16, 1, 7, 33} {
		for _, cols := range []int{32, 31, 33, 64, 96, 200} {
			ldw := cols + 5
			w := make([]int8, rows*ldw)
			for i := range w {
				w[i] = int8(r.IntN(256) - 128)
			}
			chunks := (cols + amxChunk - 1) / amxChunk
			hi := make([]uint16, chunks*amxStep)
			for i := range hi {
				hi[i] = 0xdead
			}
			packQ8Block(hi, w, ldw, rows, cols, chunks)
			twin := make([]uint16, len(hi))
			for j := 0; j < amxRowTiles; j++ {
				tr := min(amxTile, max(0, rows-j*amxTile))
				packQ8TileGo(twin[j*amxElems:], amxStep, w[min(len(w), j*amxTile*ldw):], ldw, tr, cols, chunks)
			}
			eachPacked(rows, chunks, func(i, row, k int) {
				want := float32(0)
				if row < rows && k < cols {
					want = float32(w[row*ldw+k])
				}
				if got := bf16DAZ(hi[i]); got != want || hi[i] != twin[i] {
					t.Fatalf("%dx%d: row %d column %d packed as %#04x (%g), want %g; twin %#04x", rows, cols, row, k, hi[i], got, want, twin[i])
				}
			})
		}
	}
}

// TestMatMulQ8AMX checks the AMX product of int8 codes against the float64 product of the
// dequantized weights (qRef) on odd shapes, exact on integers (scales of 1), else within the
// float32 bound of 3 rounded additions per column and the scale's product; the padding columns
// of y must stay NaN. On a machine without AMX it runs the tile kernel's Go twin.
func TestMatMulQ8AMX(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, integers := range []bool{false, true} {
		for _, n := range []int{1, 16, 17, 70} {
			for _, rows := range []int{1, 15, 48, 50} {
				for _, cols := range []int{1, 32, 33, 300} {
					m := newQ8(r, rows, cols, integers, 3)
					x := randActs16(r, n, cols, integers)
					ref, mag := qRef(m, x, n)
					ldy := rows + 2
					y := nanSlice(n * ldy)
					var a BF16Acts
					a.Split(nil, x, n, cols)
					MatMulQ8AMX(y, ldy, &a, m.w8, m.scale, rows)
					got := make([]float32, n*rows)
					for tk := 0; tk < n; tk++ {
						copy(got[tk*rows:], y[tk*ldy:tk*ldy+rows])
						for j := rows; j < ldy; j++ {
							if v := y[tk*ldy+j]; v == v {
								t.Fatalf("n=%d %dx%d: y[%d][%d] outside the rows was written", n, rows, cols, tk, j)
							}
						}
					}
					checkClose(t, fmt.Sprintf("MatMulQ8AMX int=%v n=%d %dx%d", integers, n, rows, cols), got, ref, mag, 3*cols+2, integers)
				}
			}
		}
	}
}

// TestScaleRows checks MatMulQ8AMX's scaling of its result rows: each value times its row's
// scale, bit for bit as a Go multiply, whole 16-value blocks (the assembly) and the rest, and
// nothing past the rows of each token.
func TestScaleRows(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, rows := range []int{1, 15, 16, 17, 48, 100} {
		for _, n := range []int{1, 3, 16} {
			ldy := rows + 5
			y, want := make([]float32, n*ldy), make([]float32, n*ldy)
			s := make([]float32, rows)
			for i := range s {
				s[i] = float32(r.NormFloat64())
			}
			for i := range y {
				y[i] = float32(r.NormFloat64())
				want[i] = y[i]
				if i%ldy < rows {
					want[i] *= s[i%ldy]
				}
			}
			scaleRows(y, ldy, s, n)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d rows, %d tokens: y[%d] = %g, want %g", rows, n, i, y[i], want[i])
				}
			}
		}
	}
}

// TestAMXImplNames checks what doctor says of the AMX prefill kernel: AMX where the CPU has it
// and the system grants it, the GEMM where the CPU has none, and the GEMM with the reason where
// the system refuses it.
func TestAMXImplNames(t *testing.T) {
	if got := amxImplFor("avx512 6x4", true, true); !strings.HasPrefix(got, "amx-bf16 16x48") {
		t.Errorf("granted: %q", got)
	}
	if got := amxImplFor("avx512 6x4", false, false); got != "avx512 6x4" {
		t.Errorf("no AMX: %q", got)
	}
	if got := amxImplFor("avx512 6x4", true, false); !strings.HasPrefix(got, "avx512 6x4 (") || !strings.Contains(got, "refused") {
		t.Errorf("refused: %q", got)
	}
}
