package mil

import (
	"errors"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/dtype"
)

// TestDispatcher runs generated kernels through Dispatcher + SimBackend for decode (1
// position), one padded bucket (40 in 64) and more positions than the largest bucket (100 =
// 64 + 36), and compares with the float64 references of TestGeneratedKernels.
func TestDispatcher(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	opts := Options{Seqs: []int{64}, MaxLMHeadRows: 128}
	specs, _ := BlobSpecs(cfg, opts)
	kernels, err := Programs(cfg, opts, Place(specs, sectionName))
	if err != nil {
		t.Fatal(err)
	}
	mb := buildModelBlobs(t, specs, 5)
	blob := func(section string) ([]byte, error) {
		b, ok := mb.sections[section]
		if !ok {
			return nil, errors.New("no such section")
		}
		return b, nil
	}
	cache := NewWeightCache()
	d, err := NewDispatcher(&SimBackend{Cache: cache}, kernels, blob)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := newRand(6)
	for _, c := range []struct {
		kind         string
		layer, chunk int
		n            int
	}{
		{arch.GroupO, 1, 0, 1}, {arch.GroupO, 1, 0, 40}, {arch.GroupO, 1, 0, 100},
		{arch.GroupQKV, 0, 0, 100}, {arch.GroupMLP, 1, 0, 70}, {GroupLMHead, -1, 1, 3},
	} {
		cin, cout, err := d.Channels(c.kind, c.layer, c.chunk)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, c.n*cin)
		for i := range x {
			x[i] = float32(2*r.Float64()-1) * 1.5
		}
		y := make([]float32, c.n*cout)
		if err := d.Run(c.kind, c.layer, c.chunk, x, c.n, y); err != nil {
			t.Fatal(err)
		}
		// The reference reads channel-major fp16 values: x rounded, laid out [cin][n].
		xcm := make([]float64, cin*c.n)
		for tok := 0; tok < c.n; tok++ {
			for ch := 0; ch < cin; ch++ {
				xcm[ch*c.n+tok] = float64(round16(x[tok*cin+ch]))
			}
		}
		key := BlobKey{Group: c.kind, Layer: c.layer, Chunk: c.chunk}.String() + "/"
		clear(mb.hidden)
		for tok := 0; tok < c.n; tok++ {
			for o := 0; o < cout; o++ {
				ref, tol := kernelRef(t, c.kind, mb, key, cfg, xcm, c.n, tok, o)
				check(t, c.kind, tok*cout+o, float64(y[tok*cout+o]), ref, tol)
			}
		}
	}
	// One decoded copy per record used: o (1), q, k, v, bias (4), gate, up, down (3), one LM-head
	// chunk (1), although attn_o and mlp ran in two buckets each.
	if n := cache.Len(); n != 9 {
		t.Errorf("weight cache holds %d tensors; want 9", n)
	}
	if err := d.Run("attn", 0, 0, make([]float32, 96), 1, make([]float32, 96)); err == nil {
		t.Error("unknown kernel group accepted")
	}
	if err := d.Run(arch.GroupO, 0, 0, make([]float32, 10), 1, make([]float32, 96)); err == nil {
		t.Error("short input accepted")
	}
	if err := d.LoadAll(); err != nil {
		t.Fatal(err)
	}
}

// TestDispatcherErrors checks the failures a bundle can cause: missing blob sections and
// kernels whose manifest I/O differs from their program.
func TestDispatcherErrors(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	specs, _ := BlobSpecs(cfg, Options{})
	kernels, _ := Programs(cfg, Options{}, Place(specs, sectionName))
	none := func(string) ([]byte, error) { return nil, errors.New("section missing") }
	d, err := NewDispatcher(&SimBackend{}, kernels, none)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.LoadAll(); err == nil || !strings.Contains(err.Error(), "section missing") {
		t.Errorf("LoadAll without blobs: %v", err)
	}
	mb := buildModelBlobs(t, specs[:1], 1)
	k := kernels[0]
	k.Outputs = []KernelIO{{Name: "y", DType: dtype.F16, Shape: []int{1, 127, 1, k.Seq}}}
	if _, err := (&SimBackend{}).Load(&k, map[string][]byte{k.Weights[0].Path: mb.sections[k.Weights[0].Section]}); err == nil || !strings.Contains(err.Error(), "listed as") {
		t.Errorf("mismatched I/O: %v", err)
	}
	bad := kernels[0]
	bad.Inputs = append(bad.Inputs, bad.Inputs[0])
	if _, err := NewDispatcher(&SimBackend{}, []Kernel{bad}, none); err == nil {
		t.Error("two-input kernel accepted")
	}
	if _, err := NewDispatcher(&SimBackend{}, []Kernel{kernels[0], kernels[0]}, none); err == nil {
		t.Error("duplicate bucket accepted")
	}
}

func TestPackColumns(t *testing.T) {
	const n, c, s = 3, 4, 32
	x := make([]float32, n*c)
	for i := range x {
		x[i] = float32(i) + 0.5
	}
	buf := make([]uint16, c*s)
	for i := range buf {
		buf[i] = 0x3C00 // stale data must be cleared in the padding
	}
	PackColumns(buf, x, n, c, s)
	for ch := 0; ch < c; ch++ {
		for tok := 0; tok < s; tok++ {
			want := float32(0)
			if tok < n {
				want = x[tok*c+ch]
			}
			if got := f16ToF32(buf[ch*s+tok]); got != want {
				t.Fatalf("channel %d column %d = %g; want %g", ch, tok, got, want)
			}
		}
	}
	y := make([]float32, n*c)
	UnpackColumns(y, buf, n, c, s)
	for i := range y {
		if y[i] != x[i] {
			t.Fatalf("round trip %d: %g != %g", i, y[i], x[i])
		}
	}
}

// TestWeightCacheShares checks that two buckets of one blob share the decoded weights.
func TestWeightCacheShares(t *testing.T) {
	cfg := parseConfig(t, smallConfigJSON)
	opts := Options{Seqs: []int{64}}
	specs, _ := BlobSpecs(cfg, opts)
	kernels, _ := Programs(cfg, opts, Place(specs, sectionName))
	mb := buildModelBlobs(t, specs, 1)
	cache := NewWeightCache()
	var ws [][]float32
	for _, k := range kernels {
		if k.Kind == arch.GroupO && k.Layer == 0 {
			e := mb.compile(t, k, cache)
			ws = append(ws, e.steps[0].in[1]) // the conv's weight
		}
	}
	if len(ws) != 2 || &ws[0][0] != &ws[1][0] {
		t.Errorf("the two attn_o buckets do not share their weights")
	}
}
