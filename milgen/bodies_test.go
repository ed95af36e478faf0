package milgen

import (
	"math"
	"strconv"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/dtype"
	"github.com/anepack/anepack/mil"
)

// modelBlobs holds random weights for every blob of a config, as blob bytes per section and as
// float64 values per record for the references.
type modelBlobs struct {
	sections map[string][]byte
	values   map[string][]float64 // key: blobplan.Key.String() + "/" + record name
	hidden   map[string][]float64 // FFN reference activations per program input column
}

func buildModelBlobs(t testing.TB, specs []blobplan.Blob, seed uint64) *modelBlobs {
	t.Helper()
	r := newRand(seed)
	mb := &modelBlobs{sections: map[string][]byte{}, values: map[string][]float64{}, hidden: map[string][]float64{}}
	for _, spec := range specs {
		var payloads [][]byte
		var dts []blobfile.DType
		for _, rec := range spec.Records {
			n := arch.Elements(rec.Shape)
			scale := 0.1 // biases
			if rec.Shape[0] != 1 {
				scale = math.Sqrt(3 / float64(rec.Shape[1]))
			}
			vals := make([]float64, n)
			var p []byte
			if rec.DType == dtype.F16 {
				h := randF16(r, n, scale)
				vals = f64s(h)
				p = f16Bytes(h)
			} else {
				f := make([]float32, n)
				for i := range f {
					f[i] = float32((2*r.Float64() - 1) * scale)
					vals[i] = float64(f[i])
				}
				p = f32Bytes(f)
			}
			mb.values[spec.Key.String()+"/"+rec.Name] = vals
			payloads = append(payloads, p)
			dts = append(dts, blobfile.DType(rec.DType.BlobCode()))
		}
		mb.sections[sectionName(spec)] = writeBlob(t, dts, payloads...)
	}
	return mb
}

func (mb *modelBlobs) compile(t testing.TB, k Program, cache *mil.WeightCache) *mil.Executable {
	t.Helper()
	w := map[string][]byte{}
	for _, kw := range k.Weights {
		w[kw.Path] = mb.sections[kw.Section]
	}
	p, err := mil.Parse([]byte(k.Text))
	if err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	e, err := p.CompileWith(w, mil.CompileOptions{Cache: cache})
	if err != nil {
		t.Fatalf("%s: %v", k.Name, err)
	}
	return e
}

// projRef returns W·x (+b) for column s of a channel-major x [in, S] and Σ|W·x|.
func projRef(w []float64, in, o int, x []float64, S, s int) (ref, mag float64) {
	for i := 0; i < in; i++ {
		v := w[o*in+i] * x[i*S+s]
		ref += v
		mag += math.Abs(v)
	}
	return ref, mag
}

// TestGeneratedPrograms runs every kind of generated program on random weights, at S = 32 with
// one live column (decode) and at S = 64 with 40 live columns (a prefill bucket with 24
// padding columns), for fp16 weight blobs, and compares the live columns with a
// float64 reference. Padding columns hold zeros, so they must come out as the bias (QKV) or
// zero. Bounds (u = 2^-11): projections u·Σ|W·x| (float32 accumulation) + half an ulp; QKV adds one rounding before the bias add:
// u·(Σ|W·x| + |b|); the FFN rounds gate, sigmoid, silu, up and their product before the down
// projection: 6u·Σ|Wd|·|h| + half an ulp.
func TestGeneratedPrograms(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			cfg := parseConfig(t, smallConfigJSON)
			opts := Options{Seqs: []int{64}, Blobs: blobplan.Options{MaxLMHeadRows: 128, WeightDType: dt}}
			specs, err := blobplan.Blobs(cfg, opts.Blobs)
			if err != nil {
				t.Fatal(err)
			}
			programs, err := Programs(cfg, opts, blobplan.Place(specs, sectionName))
			if err != nil {
				t.Fatal(err)
			}
			mb := buildModelBlobs(t, specs, 10+uint64(dt))
			r := newRand(20)
			checked := map[string]bool{}
			for _, k := range programs {
				if k.Layer == 0 { // layer 1 has identical programs with other offsets' data
					continue
				}
				live := 1
				if k.Seq == 64 {
					live = 40
				}
				in, outC, S := k.Inputs[0].Shape[1], k.Outputs[0].Shape[1], k.Seq
				x := make([]uint16, in*S)
				for c := 0; c < in; c++ {
					copy(x[c*S:c*S+live], randF16(r, live, 1.5))
				}
				e := mb.compile(t, k, nil)
				clear(mb.hidden)
				if k.Kind == arch.GroupO && e.Ops() != 1 {
					t.Errorf("%s: %d runtime ops; want 1 (the conv)", k.Name, e.Ops())
				}
				y := evalF16(t, e, x, outC*S)
				xf := f64s(x)
				key := blobplan.Key{Group: k.Kind, Layer: k.Layer, Chunk: k.Chunk}.String() + "/"
				for s := 0; s < S; s++ {
					for o := 0; o < outC; o++ {
						ref, tol := programRef(t, k.Kind, mb, key, cfg, xf, S, s, o)
						if s >= live {
							tol = 0 // zero input columns give exactly the bias or zero
						}
						check(t, k.Name, o*S+s, y[o*S+s], ref, tol)
					}
				}
				checked[k.Kind+"/"+strconv.Itoa(k.Seq)] = true
			}
			for _, want := range []string{"attn_qkv/32", "attn_qkv/64", "attn_o/32", "attn_o/64", "mlp/32", "mlp/64", "lm_head/32"} {
				if !checked[want] {
					t.Errorf("no %s program checked", want)
				}
			}
		})
	}
}

// programRef computes output channel o at column s of a program in float64 with its bound.
func programRef(t *testing.T, kind string, mb *modelBlobs, key string, cfg *arch.Config, x []float64, S, s, o int) (ref, tol float64) {
	h, inter := cfg.HiddenSize, cfg.IntermediateSize
	q, kv := cfg.NumAttentionHeads*cfg.HeadDim, cfg.NumKeyValueHeads*cfg.HeadDim
	switch kind {
	case arch.GroupQKV:
		w, oo := mb.values[key+"q"], o
		switch {
		case o >= q+kv:
			w, oo = mb.values[key+"v"], o-q-kv
		case o >= q:
			w, oo = mb.values[key+"k"], o-q
		}
		r, mag := projRef(w, h, oo, x, S, s)
		b := mb.values[key+"qkv_bias"][o]
		return r + b, u16*(mag+math.Abs(b)) + ulp16(r+b)/2
	case arch.GroupO:
		r, mag := projRef(mb.values[key+"o"], q, o, x, S, s)
		return r, u16*mag + ulp16(r)/2
	case arch.GroupLMHead:
		r, mag := projRef(mb.values[key+"lm_head"], h, o, x, S, s)
		return r, u16*mag + ulp16(r)/2
	case arch.GroupMLP:
		ck := key + strconv.Itoa(s)
		hid := mb.hidden[ck]
		if hid == nil {
			hid = make([]float64, inter)
			for j := range hid {
				g, _ := projRef(mb.values[key+"gate"], h, j, x, S, s)
				u, _ := projRef(mb.values[key+"up"], h, j, x, S, s)
				hid[j] = g / (1 + math.Exp(-g)) * u
			}
			mb.hidden[ck] = hid
		}
		var mag float64
		for j, hj := range hid {
			wd := mb.values[key+"down"][o*inter+j]
			ref += wd * hj
			mag += math.Abs(wd * hj)
		}
		return ref, 6*u16*mag + ulp16(ref)/2
	}
	t.Fatalf("unknown kind %s", kind)
	return 0, 0
}
