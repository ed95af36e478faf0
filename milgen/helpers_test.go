package milgen

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

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
)

// smallConfigJSON is a Qwen2 config small enough for hand-derived golden files: hidden 96,
// 4 heads of 16 (Cq = 64), 2 KV heads (Ckv = 32), intermediate 160, vocab 200.
const smallConfigJSON = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 96, "intermediate_size": 160,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 200,
 "max_position_embeddings": 128, "tie_word_embeddings": true}`

func parseConfig(t testing.TB, js string) *arch.Config {
	t.Helper()
	cfg, err := arch.ParseConfig([]byte(js), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// randF16 returns n fp16 values uniform in [-scale, scale].
func randF16(r *rand.Rand, n int, scale float64) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = half.F32ToF16Scalar(float32((2*r.Float64() - 1) * scale))
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
		out[i] = float64(half.F16ToF32Scalar(h))
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

// readTestdata reads a program of package mil's testdata: the golden files of the generator
// (gen_*.mil) are also the simulator's test programs.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "mil", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compileText(t testing.TB, text []byte, weights map[string][]byte) *mil.Executable {
	t.Helper()
	p, err := mil.Parse(text)
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

const u16 = 1.0 / 2048 // 2^-11, the fp16 unit roundoff

func check(t *testing.T, what string, i int, got, ref, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-ref) > tol {
		t.Fatalf("%s[%d] = %g; float64 reference %g (|error| %g > tolerance %g)", what, i, got, ref, math.Abs(got-ref), tol)
	}
}

func evalF16(t *testing.T, e *mil.Executable, x []uint16, outN int) []float64 {
	t.Helper()
	y := make([]uint16, outN)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	return f64s(y)
}
