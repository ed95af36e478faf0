package main

// The "NN" GEMM of attention: C[m][n] (+)= sum_k A[m][k] * B[k][n], every
// matrix row-major with its own row stride. Unlike the weight GEMM (both
// operands contiguous along k, a dot product per output), here B's rows run
// along the outputs, so a micro-tile keeps MR x NR outputs in registers,
// broadcasts one A value per row and multiplies it with NR/lanes vectors of
// one B row: no horizontal sums, and k may be as short as a head (64).
// Attention uses it for S = Q·Kᵀ (B = the keys transposed once per layer)
// and O = P·V (B = the values as cached).
//
// Each kernel computes MR rows x (panels * NR) columns: for each column panel
// (NR columns) the k loop runs over all of k. n must be a multiple of the
// vector width; the Go driver pads or finishes the rest.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// nnRows is MR, the most rows of A (and C) one kernel handles: 6 rows x 4
// ZMM (64 columns) are 24 accumulators on AVX-512, 6 x 2 YMM (16 columns)
// are 12 on AVX2.
const nnRows = 6

// nnISA describes one instruction-set level of the NN kernels.
type nnISA struct {
	name  string // kernel name suffix
	lanes int    // float32 per vector
	wide  int    // vectors per row in the wide panel (NR = wide*lanes)
	vec   func() VecVirtual
	zero  func(VecVirtual)
}

var nnISAs = []nnISA{
	{"Z", 16, 4, ZMM, func(v VecVirtual) { VPXORD(v, v, v) }},
	{"Y", 8, 2, YMM, func(v VecVirtual) { VXORPS(v, v, v) }},
}

// nnName names the NN kernel for rows x vecs vectors of isa.
func nnName(isa nnISA, rows, vecs int) string {
	return fmt.Sprintf("gemmNN%s%dx%d", isa.name, rows, vecs*isa.lanes)
}

// nnKernels emits every NN kernel: 1..nnRows rows, each with the wide panel
// and a one-vector panel for the leftover columns.
func nnKernels() {
	for _, isa := range nnISAs {
		for r := 1; r <= nnRows; r++ {
			for _, v := range []int{1, isa.wide} {
				nnKernel(isa, r, v)
			}
		}
	}
}

// nnKernel emits one NN kernel of R rows x V vectors:
//
//	for p < panels, i < R, j < V*lanes:
//	    s = sum_{kk<k} a[i*lda+kk] * b[kk*ldb + p*V*lanes + j]
//	    c[i*ldc + p*V*lanes + j] = s, or += s when add != 0
func nnKernel(isa nnISA, R, V int) {
	name := nnName(isa, R, V)
	nr := V * isa.lanes
	TEXT(name, NOSPLIT, "func(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, k, panels, add int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets (add == 0) or adds to (add != 0) c[i*ldc+p*%d+j] the sum_{kk<k} a[i*lda+kk]*b[kk*ldb+p*%d+j] for i < %d, j < %d, p < panels; k > 0.", name, nr, nr, R, nr))
	cLocal, bLocal := AllocLocal(8), AllocLocal(8)
	{
		cb := Load(Param("c").Base(), GP64())
		MOVQ(cb, cLocal)
		bb := Load(Param("b").Base(), GP64())
		MOVQ(bb, bLocal)
	}
	// rows[i] = &a[i*lda]; ka is the byte offset of column kk within a row.
	a0 := Load(Param("a").Base(), GP64())
	lda := Load(Param("lda"), GP64())
	rows := make([]GPVirtual, R)
	for i := range rows {
		rows[i] = GP64()
		if i == 0 {
			MOVQ(a0, rows[i])
		} else {
			LEAQ(Mem{Base: rows[i-1], Index: lda, Scale: 4}, rows[i])
		}
	}
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)
	ka, bp, kk := GP64(), GP64(), GP64()

	Label("panel")
	XORQ(ka, ka)
	MOVQ(bLocal, bp)
	MOVQ(paramMem("k"), kk)
	acc := make([][]VecVirtual, R)
	for i := range acc {
		acc[i] = make([]VecVirtual, V)
		for j := range acc[i] {
			acc[i][j] = isa.vec()
			isa.zero(acc[i][j])
		}
	}
	Label("loop")
	bv := make([]VecVirtual, V)
	for j := range bv {
		bv[j] = isa.vec()
		VMOVUPS(Mem{Base: bp, Disp: 4 * isa.lanes * j}, bv[j])
	}
	av := isa.vec()
	for i := 0; i < R; i++ {
		VBROADCASTSS(Mem{Base: rows[i], Index: ka, Scale: 1}, av)
		for j := 0; j < V; j++ {
			VFMADD231PS(bv[j], av, acc[i][j])
		}
	}
	ADDQ(U8(4), ka)
	ADDQ(ldb, bp)
	DECQ(kk)
	JNZ(LabelRef("loop"))

	// Store the tile, row by row; kk (free until the next panel) walks c.
	cp := kk
	MOVQ(cLocal, cp)
	ldc := ka // free until the next panel too
	MOVQ(paramMem("ldc"), ldc)
	SHLQ(U8(2), ldc)
	for i := 0; i < R; i++ {
		set := fmt.Sprintf("set%d", i)
		CMPQ(paramMem("add"), U8(0))
		JE(LabelRef(set))
		for j := 0; j < V; j++ {
			VADDPS(Mem{Base: cp, Disp: 4 * isa.lanes * j}, acc[i][j], acc[i][j])
		}
		Label(set)
		for j := 0; j < V; j++ {
			VMOVUPS(acc[i][j], Mem{Base: cp, Disp: 4 * isa.lanes * j})
		}
		if i+1 < R {
			ADDQ(ldc, cp)
		}
	}
	ADDQ(U32(4*nr), cLocal)
	ADDQ(U32(4*nr), bLocal)
	DECQ(paramMem("panels"))
	JNZ(LabelRef("panel"))
	VZEROUPPER()
	RET()
}
