package mil

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// randF16 returns n fp16 values uniform in [-scale, scale].
func randF16(r *rand.Rand, n int, scale float64) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = f32ToF16(float32((2*r.Float64() - 1) * scale))
	}
	return out
}

func f16Bytes(v []uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, h := range v {
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func f64s(v []uint16) []float64 {
	out := make([]float64, len(v))
	for i, h := range v {
		out[i] = float64(f16ToF32(h))
	}
	return out
}

// writeBlob writes a blob file holding the payloads with blobfile's streaming writer.
func writeBlob(t testing.TB, dtypes []blobfile.DType, payloads ...[]byte) []byte {
	t.Helper()
	entries := make([]blobfile.Entry, len(payloads))
	for i, p := range payloads {
		entries[i] = blobfile.Entry{DType: dtypes[i], Size: int64(len(p))}
	}
	var buf bytes.Buffer
	w, err := blobfile.NewWriter(&buf, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		if _, err := w.Next(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compileText(t testing.TB, text []byte, weights map[string][]byte) *Executable {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Compile(weights)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ulp16 returns the spacing of fp16 values at |x| (the subnormal spacing below 2^-14).
func ulp16(x float64) float64 {
	a := math.Abs(x)
	if a < 1.0/16384 {
		return math.Ldexp(1, -24)
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-11)
}

// firstDiff describes where two texts first differ, line by line.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return "no difference"
}
