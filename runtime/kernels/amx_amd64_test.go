//go:build !noasm

package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/half"
)

// TestAMXTilesMatchTwin runs the AMX micro-kernel and its Go twin on the same random tiles,
// setting and adding to C, with and without remainder products, and holds both to the float32
// accumulation bound of the exact sum of their products. They are not bit-identical: the twin
// rounds every addition as Intel's manual writes TDPBF16PS, and Sapphire Rapids rounds its
// sums otherwise (on random tiles ~85% of values differ in the last bits, and no simpler model
// tried, pair sums or whole-row sums rounded once, toward zero or to nearest, matched either).
// It needs a CPU with AMX (Sapphire Rapids or later, Linux 5.16+); elsewhere TestMatMulF16AMX
// covers the driver with the twin.
func TestAMXTilesMatchTwin(t *testing.T) {
	if !amxAvailable() {
		t.Skip("no usable AMX-BF16 on this machine")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, flags := range []int{0, amxFlagAcc, amxFlagLow, amxFlagAcc | amxFlagLow} {
		for _, chunks := range []int{1, 3, 8} {
			for _, tiles := range []int{1, 3} {
				rowTiles := 1 + (chunks+tiles)%amxRowTiles
				lda := chunks*amxStep + 64
				a := make([]uint16, tiles*lda)
				for tok := 0; tok < tiles*amxTile; tok++ {
					x := make([]float32, chunks*amxChunk)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					splitRowGo(a[tok/amxTile*lda+tok%amxTile*amxChunk:], x, chunks)
				}
				b, blo := make([]uint16, chunks*amxStep), make([]uint16, chunks*amxStep)
				for i := range b {
					v := float32(r.NormFloat64())
					h := bf16High(v)
					b[i] = uint16(math.Float32bits(h) >> 16)
					blo[i] = uint16(math.Float32bits((v-h)*(1.0/256)) >> 16)
				}
				ldc := amxRows + 5
				got, twin := make([]float32, tiles*amxTile*ldc), make([]float32, tiles*amxTile*ldc)
				for i := range got {
					got[i] = float32(r.NormFloat64())
				}
				init := append([]float32(nil), got...)
				copy(twin, got)
				k := amxCall{c: got, ldc: ldc, a: a, lda: lda, b: b, blo: blo, chunks: chunks, tiles: tiles, rowTiles: rowTiles, flags: flags}
				amxTiles(&k)
				k.c = twin
				amxTilesGo(&k)
				passes, differ := 0, 0
				for _, p := range amxPasses {
					if !p.low || flags&amxFlagLow != 0 {
						passes++
					}
				}
				for m := 0; m < tiles*amxTile; m++ {
					for n := 0; n < rowTiles*amxTile; n++ {
						var ref, mag float64
						if flags&amxFlagAcc != 0 {
							ref, mag = float64(init[m*ldc+n]), math.Abs(float64(init[m*ldc+n]))
						}
						j, col := n/amxTile, n%amxTile
						for c := 0; c < chunks; c++ {
							for _, p := range amxPasses {
								if p.low && flags&amxFlagLow == 0 {
									continue
								}
								bt := b
								if p.low {
									bt = blo
								}
								for kk := 0; kk < amxChunk; kk++ {
									av := float64(bf16DAZ(a[m/amxTile*lda+c*amxStep+p.part*amxElems+m%amxTile*amxChunk+kk]))
									bv := float64(bf16DAZ(bt[c*amxStep+j*amxElems+kk/2*amxChunk+2*col+kk%2]))
									ref += av * bv
									mag += math.Abs(av * bv)
								}
							}
						}
						tol := float64(passes*amxChunk*chunks+16) * u * mag
						i := m*ldc + n
						for _, v := range []struct {
							name string
							got  float32
						}{{"AMX", got[i]}, {"twin", twin[i]}} {
							if d := math.Abs(float64(v.got) - ref); !(d <= tol) {
								t.Fatalf("flags %d, %d chunks, %d tiles, %d row tiles: %s C[%d][%d] = %g, want %g (|diff| %g > %g)", flags, chunks, tiles, rowTiles, v.name, m, n, v.got, ref, d, tol)
							}
						}
						if got[i] != twin[i] {
							differ++
						}
					}
				}
				t.Logf("flags %d, %d chunks, %d tiles, %d row tiles: %d of %d values differ from the twin in the last bits", flags, chunks, tiles, rowTiles, differ, tiles*amxTile*rowTiles*amxTile)
			}
		}
	}
}

// TestAMXEncodings assembles the AT&T form in the comment of each AMX #define in
// amx_amd64.s with GNU as (binutils, which make test installs) and wants the bytes written
// there: Go's assembler has no AMX mnemonics, so the instructions are spelled as BYTEs.
func TestAMXEncodings(t *testing.T) {
	src, err := os.ReadFile("amx_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^#define (\w+) ((?:BYTE \$0x[0-9a-f]{2}; )*BYTE \$0x[0-9a-f]{2}) // (.+)$`)
	defs := def.FindAllStringSubmatch(string(src), -1)
	if len(defs) < 28 {
		t.Fatalf("found %d AMX #defines in amx_amd64.s, want at least 28", len(defs))
	}
	var asm strings.Builder
	for _, d := range defs {
		asm.WriteString(d[3] + "\n")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "amx.s"), []byte(asm.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	obj, bin := filepath.Join(dir, "amx.o"), filepath.Join(dir, "amx.bin")
	for _, cmd := range [][]string{{"as", "-o", obj, filepath.Join(dir, "amx.s")}, {"objcopy", "-O", "binary", "-j", ".text", obj, bin}} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	hexByte := regexp.MustCompile(`\$0x([0-9a-f]{2})`)
	for _, d := range defs {
		var want []byte
		for _, h := range hexByte.FindAllStringSubmatch(d[2], -1) {
			var v byte
			for _, c := range h[1] {
				v = v<<4 | byte(strings.IndexRune("0123456789abcdef", c))
			}
			want = append(want, v)
		}
		if !bytes.HasPrefix(code, want) {
			n := min(len(code), len(want))
			t.Fatalf("%s: GNU as encodes %q as % x, amx_amd64.s has % x", d[1], d[3], code[:n], want)
		}
		code = code[len(want):]
	}
	if len(code) != 0 {
		t.Fatalf("%d bytes left over", len(code))
	}
}

// BenchmarkMatMulF16AMX compares, on one core, the AMX product (the activations' split
// included, as prefill pays it once per input) with MatMulF16 (AVX-512 or AVX2) on
// Qwen2.5-0.5B's shapes. "amx" has weights that are exact in bfloat16, as every weight of a
// bfloat16 checkpoint is (3 tile products per step); "amx-fp16" general fp16 weights (5).
// Without AMX only the MatMulF16 rows run.
func BenchmarkMatMulF16AMX(b *testing.B) {
	w16, _ := benchWeights(1, false)
	fp16 := w16[0][:benchRows*benchCols]
	bf16 := bf16ExactF16(fp16)
	for _, n := range []int{32, 128, 512} {
		for _, s := range []struct{ rows, cols int }{{benchRows, benchCols}, {benchCols, benchRows}, {benchCols, benchCols}} {
			x := benchVec(n * s.cols)
			y := make([]float32, n*s.rows)
			flops := 2 * float64(n*s.rows*s.cols)
			b.Run(fmt.Sprintf("%dx%d/n=%d/matmul", s.rows, s.cols, n), func(b *testing.B) {
				for b.Loop() {
					MatMulF16(y, x, bf16[:s.rows*s.cols], n, s.rows, s.cols)
				}
				reportGFLOPS(b, flops)
			})
			if !amxAvailable() {
				continue
			}
			var a BF16Acts
			for _, w := range []struct {
				name string
				w    []uint16
			}{{"amx", bf16}, {"amx-fp16", fp16}} {
				b.Run(fmt.Sprintf("%dx%d/n=%d/%s", s.rows, s.cols, n, w.name), func(b *testing.B) {
					for b.Loop() {
						a.Split(nil, x, n, s.cols)
						MatMulF16AMX(y, s.rows, &a, w.w[:s.rows*s.cols], s.rows)
					}
					reportGFLOPS(b, flops)
				})
			}
		}
	}
}

// BenchmarkAMXKernel times the tile kernel of MatMulF16AMX on one core, on 8 token tiles of
// L1/L2-resident data (ns per tile product).
func BenchmarkAMXKernel(b *testing.B) {
	if !amxAvailable() {
		b.Skip("no usable AMX-BF16 on this machine")
	}
	r := rand.New(rand.NewPCG(23, 24))
	const tiles = 8
	for _, chunks := range []int{8, 28} {
		a := make([]uint16, tiles*chunks*amxStep)
		for i := range a {
			a[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
		}
		w := a[:chunks*amxStep]
		c := make([]float32, tiles*amxTile*amxRows)
		for _, flags := range []int{0, amxFlagLow} {
			b.Run(fmt.Sprintf("tiles/chunks=%d/flags=%d", chunks, flags), func(b *testing.B) {
				k := amxCall{c: c, ldc: amxRows, a: a, lda: chunks * amxStep, b: w, blo: w, chunks: chunks, tiles: tiles, rowTiles: amxRowTiles, flags: flags}
				for b.Loop() {
					amxTiles(&k)
				}
				products := 9
				if flags != 0 {
					products = 15
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*tiles*chunks*products), "ns/tdp")
			})
		}
	}
}

// BenchmarkAMXPack times the AVX512BW halves of MatMulF16AMX on one core (they need no AMX; on
// a CPU without AVX512BW, their Go twins): packing a 48-row weight block of 8 chunks into B
// tiles, general fp16 weights (both passes) and bfloat16-exact ones (the high pass only: a
// bfloat16 checkpoint's), from cache and from memory (each call a new block of a 256 MB
// matrix, as in a prefill, where every layer's weights come from DRAM), and splitting 128
// tokens of 896 values.
func BenchmarkAMXPack(b *testing.B) {
	w16, _ := benchWeights(1, false)
	exact := bf16ExactF16(w16[0][:benchRows*benchCols])
	hi, lo := make([]uint16, amxKBlock*amxStep), make([]uint16, amxKBlock*amxStep)
	for _, w := range []struct {
		name string
		w    []uint16
	}{{"fp16", w16[0]}, {"bf16", exact}} {
		b.Run("pack/48x256/"+w.name, func(b *testing.B) {
			for b.Loop() {
				packF16Block(hi, lo, w.w, benchCols, amxRows, amxKBlock*amxChunk, amxKBlock)
			}
		})
		cold := make([]uint16, 128<<20)
		for i := range cold {
			cold[i] = w.w[i%len(w.w)]
		}
		b.Run("pack/48x256/"+w.name+"/cold", func(b *testing.B) {
			blocks, i := len(cold)/(amxRows*benchCols), 0
			for b.Loop() {
				packF16Block(hi, lo, cold[i*amxRows*benchCols:], benchCols, amxRows, amxKBlock*amxChunk, amxKBlock)
				i = (i + 1) % blocks
			}
		})
	}
	x := benchVec(benchTokens * benchCols)
	var acts BF16Acts
	b.Run("split/128x896", func(b *testing.B) {
		for b.Loop() {
			acts.Split(nil, x, benchTokens, benchCols)
		}
	})
}

// BenchmarkMatMulF16AMXPool is BenchmarkMatMulF16AMX on a pool of 1 to 16 threads (as many as
// the machine has), on bfloat16-exact weights and 128 tokens: "amx" with the work items
// AMXItemRows gives an in-place product (the runtime bounds a gated MLP's at 192 rows), the
// "items=" variants with 1, 2 and 4 items per thread.
func BenchmarkMatMulF16AMXPool(b *testing.B) {
	if !amxAvailable() {
		b.Skip("no usable AMX-BF16 on this machine")
	}
	w16, _ := benchWeights(1, false)
	w := bf16ExactF16(w16[0][:benchRows*benchCols])
	for _, threads := range []int{1, 2, 4, 8, 16} {
		if threads > runtime.NumCPU() {
			break
		}
		p := NewPool(threads)
		for _, s := range []struct{ rows, cols int }{{benchRows, benchCols}, {benchCols, benchRows}, {benchCols + 256, benchCols}} {
			n := benchTokens
			x := benchVec(n * s.cols)
			y := make([]float32, n*s.rows)
			flops := 2 * float64(n*s.rows*s.cols)
			name := fmt.Sprintf("%dx%d/threads=%d", s.rows, s.cols, threads)
			b.Run(name+"/matmul", func(b *testing.B) {
				for b.Loop() {
					p.MatMulF16(y, x, w[:s.rows*s.cols], n, s.rows, s.cols)
				}
				reportGFLOPS(b, flops)
			})
			var a BF16Acts
			item := func(lo, hi int) { MatMulF16AMX(y[lo:], s.rows, &a, w[lo*s.cols:hi*s.cols], hi-lo) }
			// The runtime's work items (AMXItemRows, in place: no bound), then a fixed 1, 2 and 4
			// items per thread for comparison.
			for _, per := range []int{0, 1, 2, 4} {
				grain, sub := AMXItemRows(s.rows, s.cols, n, threads, s.rows), "amx"
				if per > 0 {
					grain = max(((s.rows+per*threads-1)/(per*threads)+15)&^15, 32)
					sub = fmt.Sprintf("amx/items=%dx", per)
				}
				b.Run(name+"/"+sub, func(b *testing.B) { runAMXProduct(b, p, &a, x, n, s.rows, s.cols, grain, nil, item) })
			}
		}
		p.Close()
	}
}

// runAMXProduct is the timed loop of the pool benchmarks' AMX products: per iteration i, next
// (when set) picks the weights, the n tokens of x (cols values each) are split over p into a,
// and rows weight rows run as work items of grain rows (item); it reports GFLOPS.
func runAMXProduct(b *testing.B, p *Pool, a *BF16Acts, x []float32, n, rows, cols, grain int, next func(i int), item func(lo, hi int)) {
	for i := 0; b.Loop(); i++ {
		if next != nil {
			next(i)
		}
		a.Split(p, x, n, cols)
		p.Parallel(rows, grain, item)
	}
	reportGFLOPS(b, 2*float64(n*rows*cols))
}

// BenchmarkMatMulF16AMXCold is BenchmarkMatMulF16AMXPool's AMX product with weights from
// memory, as in a prefill (each iteration the next of 12 copies, 105 MB in all, beyond L3),
// with and without the prefetch of each next weight block (amxPrefetch), on 1 and 2 threads.
func BenchmarkMatMulF16AMXCold(b *testing.B) {
	if !amxAvailable() {
		b.Skip("no usable AMX-BF16 on this machine")
	}
	const copies = 12
	w16, _ := benchWeights(copies, false)
	for i := range w16 {
		w16[i] = bf16ExactF16(w16[i][:benchRows*benchCols])
	}
	defer func() { amxPrefetch = true }()
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, s := range []struct{ rows, cols int }{{benchRows, benchCols}, {benchCols, benchRows}} {
			n := benchTokens
			x := benchVec(n * s.cols)
			y := make([]float32, n*s.rows)
			var a BF16Acts
			var w []uint16
			item := func(lo, hi int) { MatMulF16AMX(y[lo:], s.rows, &a, w[lo*s.cols:hi*s.cols], hi-lo) }
			grain := AMXItemRows(s.rows, s.cols, n, threads, s.rows)
			for _, pf := range []bool{true, false} {
				b.Run(fmt.Sprintf("%dx%d/threads=%d/prefetch=%v", s.rows, s.cols, threads, pf), func(b *testing.B) {
					amxPrefetch = pf
					runAMXProduct(b, p, &a, x, n, s.rows, s.cols, grain, func(i int) { w = w16[i%copies] }, item)
				})
			}
		}
		p.Close()
	}
}

// BenchmarkMatMulQ8AMX compares the q8 prefill products on 128 tokens, 1 and 2 threads,
// weights from memory (each iteration the next of 12 copies): MatMulQ8Float (float activations
// on the vector units) and MatMulQ8AMX (split included), with the runtime's work items.
func BenchmarkMatMulQ8AMX(b *testing.B) {
	if !amxAvailable() {
		b.Skip("no usable AMX-BF16 on this machine")
	}
	const copies = 12
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		for _, s := range []struct{ rows, cols int }{{benchRows, benchCols}, {benchCols, benchRows}} {
			ms := benchMatrices(s.rows, s.cols, 0, copies)
			n := benchTokens
			x := benchVec(n * s.cols)
			y := make([]float32, n*s.rows)
			flops := 2 * float64(n*s.rows*s.cols)
			var a BF16Acts
			var m benchMatrix
			float := func(lo, hi int) {
				MatMulQ8Float(y[lo:], s.rows, x, n, m.w8[lo*s.cols:hi*s.cols], m.scale[lo:hi], hi-lo, s.cols)
			}
			amx := func(lo, hi int) { MatMulQ8AMX(y[lo:], s.rows, &a, m.w8[lo*s.cols:hi*s.cols], m.scale[lo:hi], hi-lo) }
			name := fmt.Sprintf("%dx%d/threads=%d", s.rows, s.cols, threads)
			b.Run(name+"/float", func(b *testing.B) {
				i := 0
				for b.Loop() {
					m = ms[i%copies]
					i++
					p.Parallel(s.rows, min(max(s.rows/(4*threads), 12), 48)/12*12, float) // the runtime's prefill items
				}
				reportGFLOPS(b, flops)
			})
			b.Run(name+"/amx", func(b *testing.B) {
				runAMXProduct(b, p, &a, x, n, s.rows, s.cols, AMXItemRows(s.rows, s.cols, n, threads, s.rows), func(i int) { m = ms[i%copies] }, amx)
			})
		}
		p.Close()
	}
}

// BenchmarkAMXKernelThreads runs the tile kernel of BenchmarkAMXKernel (28 chunks, 8 token
// tiles, cache-resident data) on 1 to 16 goroutines at once, each on its own data and OS
// thread: ns per tile product per thread shows whether the cores' AMX units slow each other.
func BenchmarkAMXKernelThreads(b *testing.B) {
	if !amxAvailable() {
		b.Skip("no usable AMX-BF16 on this machine")
	}
	const tiles, chunks = 8, 28
	for _, threads := range []int{1, 2, 4, 8, 16} {
		if threads > runtime.NumCPU() {
			break
		}
		calls := make([]amxCall, threads)
		for i := range calls {
			a := make([]uint16, tiles*chunks*amxStep)
			for j := range a {
				a[j] = 0x3f80 + uint16(j%7) // 1.0 and neighbours
			}
			calls[i] = amxCall{c: make([]float32, tiles*amxTile*amxRows), ldc: amxRows, a: a, lda: chunks * amxStep,
				b: a[:chunks*amxStep], blo: a[:chunks*amxStep], chunks: chunks, tiles: tiles, rowTiles: amxRowTiles}
		}
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var wg sync.WaitGroup
			for i := range calls {
				wg.Add(1)
				go func(k *amxCall) {
					defer wg.Done()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					for j := 0; j < b.N; j++ {
						amxTiles(k)
					}
				}(&calls[i])
			}
			wg.Wait()
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*tiles*chunks*9), "ns/tdp")
		})
	}
}

// bf16ExactF16 returns fp16 weights rounded to values a bfloat16 holds exactly, as every weight
// of a bfloat16 checkpoint is.
func bf16ExactF16(w []uint16) []uint16 {
	out := make([]uint16, len(w))
	for i, h := range w {
		out[i] = half.F32ToF16Scalar(bf16High(half.F16ToF32Scalar(h)))
	}
	return out
}
