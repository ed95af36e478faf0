package dispatch

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/blobplan"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/half"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/milgen"
)

// smallConfigJSON is a Qwen2 config: hidden 96, 4 heads of 16 (Cq = 64), 2 KV heads
// (Ckv = 32), intermediate 160, vocab 200.
const smallConfigJSON = `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 96, "intermediate_size": 160,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 200,
 "max_position_embeddings": 128, "tie_word_embeddings": true}`

// bundle is what a packed bundle gives the dispatcher: the programs' manifest records and the
// sections they name (one MIL section, one per blob file of random fp16 weights).
type bundle struct {
	programs []format.Program
	sections map[string][]byte
}

func (b *bundle) section(name string) ([]byte, error) {
	s, ok := b.sections[name]
	if !ok {
		return nil, errors.New("no such section")
	}
	return s, nil
}

// text returns the MIL text of k.
func (b *bundle) text(k *format.Program) []byte {
	return b.sections[k.MIL][k.MILOffset : k.MILOffset+k.MILSize]
}

// weights returns the blob files k names, by path.
func (b *bundle) weights(k *format.Program) map[string][]byte {
	w := map[string][]byte{}
	for _, kw := range k.Weights {
		w[kw.Path] = b.sections[kw.Section]
	}
	return w
}

func newBundle(t *testing.T, opts milgen.Options, seed uint64) *bundle {
	t.Helper()
	cfg, err := arch.ParseConfig([]byte(smallConfigJSON), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blobplan.Blobs(cfg, opts.Blobs)
	if err != nil {
		t.Fatal(err)
	}
	section := func(b blobplan.Blob) string { return "blob/" + b.Key.String() }
	progs, err := milgen.Programs(cfg, opts, blobplan.Place(blobs, section))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := &bundle{sections: map[string][]byte{}}
	for _, s := range blobs {
		var buf bytes.Buffer
		w, err := blobfile.NewWriter(&buf, s.Entries())
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range s.Records {
			if _, err := w.Next(); err != nil {
				t.Fatal(err)
			}
			p := make([]byte, rec.Size())
			for i := 0; i < len(p); i += 2 {
				h := half.F32ToF16Scalar(float32(2*r.Float64()-1) * 0.2)
				p[i], p[i+1] = byte(h), byte(h>>8)
			}
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b.sections[section(s)] = buf.Bytes()
	}
	var text []byte
	for _, p := range progs {
		k := p.Program
		k.MIL, k.MILOffset, k.MILSize = "mil", int64(len(text)), int64(len(p.Text))
		text = append(text, p.Text...)
		b.programs = append(b.programs, k)
	}
	b.sections["mil"] = text
	return b
}

// TestDispatcher runs generated programs through Dispatcher + SimBackend for decode (1
// position), one padded bucket (40 in 64) and more positions than the largest bucket (100 =
// 64 + 36), and compares each position with the S = 32 program evaluated by the sim on that
// position alone: every program maps each position independently, so the values are the same
// bit for bit.
func TestDispatcher(t *testing.T) {
	b := newBundle(t, milgen.Options{Seqs: []int{64}, Blobs: blobplan.Options{MaxLMHeadRows: 128}}, 5)
	cache := mil.NewWeightCache()
	d, err := NewDispatcher(&SimBackend{Cache: cache}, b.programs, b.section)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(6, 0x5eed))
	for _, c := range []struct {
		kind         string
		layer, chunk int
		n            int
	}{
		{arch.GroupO, 1, 0, 1}, {arch.GroupO, 1, 0, 40}, {arch.GroupO, 1, 0, 100},
		{arch.GroupQKV, 0, 0, 100}, {arch.GroupMLP, 1, 0, 70}, {arch.GroupLMHead, -1, 1, 3},
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
		var ref *mil.Executable
		for i := range b.programs {
			k := &b.programs[i]
			if k.Kind == c.kind && k.Layer == c.layer && k.Chunk == c.chunk && k.Seq == 32 {
				p, err := mil.Parse(b.text(k))
				if err != nil {
					t.Fatal(err)
				}
				if ref, err = p.Compile(b.weights(k)); err != nil {
					t.Fatal(err)
				}
			}
		}
		in, out := make([]uint16, cin*32), make([]uint16, cout*32)
		want := make([]float32, cout)
		for tok := 0; tok < c.n; tok++ {
			PackColumns(in, x[tok*cin:(tok+1)*cin], 1, cin, 32)
			if err := ref.Eval([][]uint16{in}, [][]uint16{out}); err != nil {
				t.Fatal(err)
			}
			UnpackColumns(want, out, 1, cout, 32)
			for o, w := range want {
				if got := y[tok*cout+o]; got != w {
					t.Fatalf("%s layer %d chunk %d, %d positions: y[%d][%d] = %g; the S = 32 program alone gives %g", c.kind, c.layer, c.chunk, c.n, tok, o, got, w)
				}
			}
		}
	}
	// One decoded copy per record used: o (1), q, k, v, bias (4), gate, up, down (3), one LM-head
	// chunk (1), although attn_o and mlp ran in two buckets each.
	if n := cache.Len(); n != 9 {
		t.Errorf("weight cache holds %d tensors; want 9", n)
	}
	if err := d.Run("attn", 0, 0, make([]float32, 96), 1, make([]float32, 96)); err == nil {
		t.Error("unknown program group accepted")
	}
	if err := d.Run(arch.GroupO, 0, 0, make([]float32, 10), 1, make([]float32, 96)); err == nil {
		t.Error("short input accepted")
	}
	if err := d.LoadAll(); err != nil {
		t.Fatal(err)
	}
}

// TestDispatcherErrors checks the failures a bundle can cause: missing sections, texts outside
// their section, and programs whose manifest I/O differs from their program.
func TestDispatcherErrors(t *testing.T) {
	b := newBundle(t, milgen.Options{}, 1)
	textOnly := func(name string) ([]byte, error) {
		if name != "mil" {
			return nil, errors.New("section missing")
		}
		return b.sections[name], nil
	}
	d, err := NewDispatcher(&SimBackend{}, b.programs, textOnly)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.LoadAll(); err == nil || !strings.Contains(err.Error(), "section missing") {
		t.Errorf("LoadAll without blobs: %v", err)
	}
	outside := b.programs[0]
	outside.MILOffset = int64(len(b.sections["mil"]))
	d, err = NewDispatcher(&SimBackend{}, []format.Program{outside}, b.section)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.LoadAll(); err == nil || !strings.Contains(err.Error(), "outside section") {
		t.Errorf("text outside its section: %v", err)
	}
	k := b.programs[0]
	k.Outputs = []format.ProgramIO{{Name: "y", DType: "f16", Shape: []int{1, 127, 1, k.Seq}}}
	if _, err := (&SimBackend{}).Load(&k, b.text(&k), b.weights(&k)); err == nil || !strings.Contains(err.Error(), "listed as") {
		t.Errorf("mismatched I/O: %v", err)
	}
	bad := b.programs[0]
	bad.Inputs = append(bad.Inputs, bad.Inputs[0])
	if _, err := NewDispatcher(&SimBackend{}, []format.Program{bad}, b.section); err == nil {
		t.Error("two-input program accepted")
	}
	fp32 := b.programs[0]
	fp32.Inputs = []format.ProgramIO{{Name: "x", DType: "f32", Shape: fp32.Inputs[0].Shape}}
	if _, err := NewDispatcher(&SimBackend{}, []format.Program{fp32}, b.section); err == nil {
		t.Error("f32 input accepted")
	}
	if _, err := NewDispatcher(&SimBackend{}, []format.Program{b.programs[0], b.programs[0]}, b.section); err == nil {
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
			if got := half.F16ToF32Scalar(buf[ch*s+tok]); got != want {
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
