package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemmNN checks gemmNN (assembly at every level this machine has) and its Go twin against
// a float64 reference on odd shapes, padded strides, and both the set and the add form.
func TestGemmNN(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, level := range isaLevels() {
		restore := level.set()
		for _, m := range []int{1, 2, 5, 6, 7, 13} {
			for _, n := range []int{1, 7, 8, 15, 16, 17, 63, 64, 65, 130} {
				for _, k := range []int{1, 2, 5, 64, 100, 600} {
					for _, add := range []bool{false, true} {
						name := fmt.Sprintf("%s m=%d n=%d k=%d add=%v", level.name, m, n, k, add)
						testGemmNN(t, r, name, m, n, k, add, gemmNN)
						testGemmNN(t, r, name+" (Go twin)", m, n, k, add, func(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool) {
							gemmNNGeneric(c, ldc, a, lda, b, ldb, m, n, k, 0, add)
						})
					}
				}
			}
		}
		restore()
	}
}

func testGemmNN(t *testing.T, r *rand.Rand, name string, m, n, k int, add bool,
	f func(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, n, k int, add bool)) {
	t.Helper()
	lda, ldb, ldc := k+3, n+5, n+2
	a, b := randVec(r, m*lda), randVec(r, k*ldb)
	c := randVec(r, m*ldc)
	c0 := append([]float32(nil), c...)
	f(c, ldc, a, lda, b, ldb, m, n, k, add)
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if got != c0[i*ldc+j] {
					t.Fatalf("%s: wrote c[%d][%d], beyond n", name, i, j)
				}
				continue
			}
			var s, mag float64
			if add {
				s, mag = float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
			}
			for kk := 0; kk < k; kk++ {
				p := float64(a[i*lda+kk]) * float64(b[kk*ldb+j])
				s += p
				mag += math.Abs(p)
			}
			if d, tol := math.Abs(float64(got)-s), float64(k+2)*u*mag; !(d <= tol) {
				t.Fatalf("%s: c[%d][%d] = %g, want %g (|diff| %g > %g)", name, i, j, got, s, d, tol)
			}
		}
	}
}
