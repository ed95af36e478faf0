package quant

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/anepack/anepack/dtype"
)

// TestKQuantPinned holds the bytes the importance-aware quantizers write for fixed weights and
// importances to digests taken on amd64: every sum of the fits is exact or explicitly rounded,
// so arm64 (where Go fuses a*b+c into one instruction) must write the very same bundle
// (`GOARCH=arm64 go test -exec qemu-aarch64 ./quant/` runs this there). A deliberate change of
// a fit changes the digests; record the new ones with the measurements that justify it.
func TestKQuantPinned(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const rows, cols = 16, 768
	w := randWeights(r, rows, cols)
	_, imp := kActs(r, 8, cols)
	src, _ := rawRows(w, dtype.F32)
	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:8]) }
	got := map[string]string{}
	for _, k := range []struct {
		name string
		dt   dtype.DType
		f    func(data, src []byte, st dtype.DType, rows, cols int, imp []float32) error
		imp  []float32
	}{{"q4k", dtype.Q4K, QuantizeQ4KFrom, nil}, {"q4k imp", dtype.Q4K, QuantizeQ4KFrom, imp},
		{"q6k", dtype.Q6K, QuantizeQ6KFrom, nil}, {"q6k imp", dtype.Q6K, QuantizeQ6KFrom, imp}} {
		rb, _ := KRowBytes(k.dt, cols)
		data := make([]byte, rows*rb)
		if err := k.f(data, src, dtype.F32, rows, cols, k.imp); err != nil {
			t.Fatal(err)
		}
		got[k.name] = digest(data)
	}
	data, scale, offset, _ := q4Buffers(rows, cols, 32)
	if err := QuantizeQ4WeightedFrom(data, scale, offset, src, dtype.F32, rows, cols, 32, imp); err != nil {
		t.Fatal(err)
	}
	side := make([]byte, 4*len(scale))
	for i := range scale {
		binary.LittleEndian.PutUint16(side[2*i:], scale[i])
		binary.LittleEndian.PutUint16(side[2*len(scale)+2*i:], offset[i])
	}
	got["q4 imp"] = digest(append(data, side...))
	want := map[string]string{
		"q4k":     "d44a39d48cd5714d",
		"q4k imp": "39522bbf1d638441",
		"q6k":     "e36ed3d34904aa39",
		"q6k imp": "2923e2c0ea5b6967",
		"q4 imp":  "362396f10d797af2",
	}
	for name, d := range got {
		if want[name] != d {
			t.Errorf("%s: digest %s, want %s", name, d, want[name])
		}
	}
}
