package milgen

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/mil"
)

// The generated programs in the simulator: what the runtime relies on besides their values
// (bodies_test.go), namely that they are column-local, that their quantized weights expand
// to dense ones without changing a bit, and that their buckets share decoded weights.

// TestGeneratedColumnLocal checks that EvalColumns on every generated program kind gives bit
// for bit the first columns of a full Eval (decode evaluates one live column of 32).
func TestGeneratedColumnLocal(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	opts := Options{Seqs: []int{64}, Blobs: blobplan.Options{MaxLMHeadRows: 128}}
	specs, _ := blobplan.Blobs(cfg, opts.Blobs)
	programs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
	if err != nil {
		t.Fatal(err)
	}
	mb := buildModelBlobs(t, specs, 3)
	r := newRand(4)
	for _, k := range programs {
		if k.Layer == 1 {
			continue
		}
		e := mb.compile(t, k, nil)
		if !e.ColumnLocal() {
			t.Errorf("%s is not column-local", k.Name)
			continue
		}
		in := []([]uint16){randF16(r, k.Inputs[0].Shape[1]*k.Seq, 1)}
		n := k.Outputs[0].Shape[1] * k.Seq
		full, part := [][]uint16{make([]uint16, n)}, [][]uint16{make([]uint16, n)}
		if err := e.Eval(in, full); err != nil {
			t.Fatal(err)
		}
		for _, cols := range []int{1, 5} {
			clear(part[0])
			if err := e.EvalColumns(in, part, cols); err != nil {
				t.Fatal(err)
			}
			for j, got := range part[0] {
				want := full[0][j]
				if j%k.Seq >= cols {
					want = 0 // untouched
				}
				if got != want {
					t.Fatalf("%s cols %d: output [%d] = %#x; full Eval %#x", k.Name, cols, j, got, want)
				}
			}
		}
	}
}

// TestExpandConstexpr generates the q8 and q4 programs of a model, fills their blob records with
// random codes, scales and offsets, and runs each in the sim as written (constexpr ops) and
// expanded (dense fp16 records): the outputs must be bit-identical, and the expanded text must
// name no constexpr op and only mil.ExpandedPath plus the files it still reads (the biases).
func TestExpandConstexpr(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.Q8, dtype.Q4} {
		cfg := parseConfig(t, smallConfigJSON)
		opts := Options{Seqs: []int{32}, Blobs: blobplan.Options{MaxLMHeadRows: 128, WeightDType: dt}}
		specs, err := blobplan.Blobs(cfg, opts.Blobs)
		if err != nil {
			t.Fatal(err)
		}
		progs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
		if err != nil {
			t.Fatal(err)
		}
		r := newRand(uint64(dt))
		sections := map[string][]byte{}
		for _, s := range specs {
			var dts []blobfile.DType
			var payloads [][]byte
			for _, rec := range s.Records {
				p := make([]byte, rec.Size())
				if rec.DType == dtype.F16 {
					copy(p, f16Bytes(randF16(r, len(p)/2, 0.05)))
				} else {
					for i := range p {
						p[i] = byte(r.IntN(256))
					}
				}
				dts = append(dts, blobfile.DType(rec.DType.BlobCode()))
				payloads = append(payloads, p)
			}
			sections[sectionName(s)] = writeBlob(t, dts, payloads...)
		}
		for _, k := range progs {
			if k.Layer == 1 {
				continue
			}
			weights := map[string][]byte{}
			for _, kw := range k.Weights {
				weights[kw.Path] = sections[kw.Section]
			}
			text, w, err := mil.ExpandConstexpr([]byte(k.Text), weights)
			if err != nil {
				t.Fatalf("%s %s: %v", dt, k.Name, err)
			}
			if strings.Contains(string(text), "constexpr_") || w[mil.ExpandedPath] == nil {
				t.Fatalf("%s %s: not expanded:\n%s", dt, k.Name, text)
			}
			x := randF16(r, k.Inputs[0].Shape[1]*k.Seq, 1)
			n := k.Outputs[0].Shape[1] * k.Seq
			want := evalText(t, []byte(k.Text), weights, x, n)
			got := evalText(t, text, w, x, n)
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("%s %s: output %d is %#04x expanded, %#04x with the constexpr op", dt, k.Name, i, got[i], want[i])
				}
			}
		}
	}
}

// evalText compiles a program and evaluates it on x, returning its n fp16 outputs.
func evalText(t *testing.T, text []byte, weights map[string][]byte, x []uint16, n int) []uint16 {
	t.Helper()
	e := compileText(t, text, weights)
	y := make([]uint16, n)
	if err := e.Eval([][]uint16{x}, [][]uint16{y}); err != nil {
		t.Fatal(err)
	}
	return y
}

// TestWeightCacheShares checks that two buckets of one blob share the decoded weights: the
// cache holds the one record of attn_o after both of its buckets are compiled.
func TestWeightCacheShares(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	opts := Options{Seqs: []int{64}}
	specs, _ := blobplan.Blobs(cfg, opts.Blobs)
	programs, _ := Programs(cfg, opts, blobplan.Place(specs, sectionName))
	mb := buildModelBlobs(t, specs, 1)
	cache := mil.NewWeightCache()
	n := 0
	for _, k := range programs {
		if k.Kind == "attn_o" && k.Layer == 0 {
			mb.compile(t, k, cache)
			n++
		}
	}
	if n != 2 || cache.Len() != 1 {
		t.Errorf("%d attn_o buckets compiled; the cache holds %d tensors, want 1", n, cache.Len())
	}
}
