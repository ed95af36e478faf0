package mil

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// fuzzMaxBytes is the byte budget FuzzParse compiles with.
const fuzzMaxBytes = 4 << 20

// FuzzParse feeds mutated MIL text to Parse and, when it parses, to SplitBlobs (whose text
// must parse again), to Compile (with weight blobs synthesised to match its BLOBFILE
// constants and small size limits) and to EvalFloat.
// None of them may panic, and together they may allocate no more than the byte budget plus
// what the text and the weights themselves account for (fuzzAllocLimit). Seeds are every
// program in testdata and the MIL bomb.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.mil"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed programs in testdata: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(bombText))
	f.Fuzz(func(t *testing.T, text []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := Parse(text)
		if err != nil {
			return
		}
		w := synthWeights(p)
		wbytes := 0
		for _, b := range w {
			wbytes += len(b)
		}
		if st, _, err := SplitBlobs(text, w); err == nil {
			if _, err := Parse(st); err != nil {
				t.Fatalf("SplitBlobs made text that does not parse: %v", err)
			}
		}
		e, err := p.CompileWith(w, CompileOptions{MaxElements: 1 << 16, MaxBytes: fuzzMaxBytes})
		if err == nil {
			in := make([][]float32, len(e.inputs))
			for i, b := range e.inputs {
				in[i] = make([]float32, len(b.data))
			}
			out := make([][]float32, len(e.outputs))
			for i, b := range e.outputs {
				out[i] = make([]float32, len(b.data))
			}
			if err := e.EvalFloat(in, out); err != nil {
				t.Fatalf("EvalFloat after a successful compile: %v", err)
			}
		}
		runtime.ReadMemStats(&after)
		if got, limit := after.TotalAlloc-before.TotalAlloc, fuzzAllocLimit(len(text), wbytes); got > limit {
			t.Fatalf("parse, compile and eval of %d bytes of text with %d bytes of weights allocated %d bytes; the bound is %d", len(text), wbytes, got, limit)
		}
	})
}

// fuzzAllocLimit is what FuzzParse allows one input to allocate: the compile budget twice
// (the executable's buffers, and the caller's input and output slices of the same size),
// the synthesised weights and their float32 decoding (3x their bytes), a parse tree
// proportional to the text, and 1 MiB for everything of fixed size.
func fuzzAllocLimit(textBytes, weightBytes int) uint64 {
	return uint64(2*fuzzMaxBytes + 3*weightBytes + 2048*textBytes + 1<<20)
}

// synthWeights builds, for every BLOBFILE path of the program, a blob with a record of the
// declared dtype and size at each referenced offset, where they fit without overlapping.
func synthWeights(p *Program) map[string][]byte {
	return synthWeightsWith(p, func(payload []byte, _ Type) {
		for i := range payload {
			payload[i] = byte(i * 7)
		}
	})
}

// synthWeightsWith is synthWeights with the payload of each record of type t filled by fill.
func synthWeightsWith(p *Program, fill func(payload []byte, t Type)) map[string][]byte {
	type ref struct {
		off uint64
		t   Type
	}
	refs := map[string][]ref{}
	visit := func(l *Literal) {
		if l != nil && l.Blob != nil {
			refs[l.Blob.Path] = append(refs[l.Blob.Path], ref{l.Blob.Offset, l.Type})
		}
	}
	for _, fn := range p.Funcs {
		for _, st := range fn.Stmts {
			for _, a := range st.Attrs {
				visit(a.Val)
			}
			for _, a := range st.Args {
				visit(a.Lit)
			}
		}
	}
	out := map[string][]byte{}
	for path, rs := range refs {
		sort.Slice(rs, func(i, j int) bool { return rs[i].off < rs[j].off })
		var b []byte
		end := uint64(64)
		count := uint32(0) // records a walk from offset 64 finds (blobfile.Parse checks them)
		walk := uint64(64)
		for _, r := range rs {
			code, ok := r.t.DType.blobCode()
			size := (uint64(r.t.Elements())*uint64(r.t.DType.Bits()) + 7) / 8
			if !ok || r.off < end || r.off%64 != 0 || r.off+64+size > 1<<20 {
				continue
			}
			if len(b) < int(r.off+64+size) {
				b = append(b, make([]byte, int(r.off+64+size)-len(b))...)
			}
			m := b[r.off:]
			binary.LittleEndian.PutUint32(m[0:], 0xDEADBEEF)
			binary.LittleEndian.PutUint32(m[4:], uint32(code))
			binary.LittleEndian.PutUint64(m[8:], size)
			binary.LittleEndian.PutUint64(m[16:], r.off+64)
			fill(m[64:64+size], r.t)
			if r.off == walk {
				count++
				walk = (r.off + 64 + size + 63) &^ 63
			}
			end = (r.off + 64 + size + 63) &^ 63
		}
		if len(b) < 64 {
			b = append(b, make([]byte, 64-len(b))...)
		}
		binary.LittleEndian.PutUint32(b[0:], count)
		binary.LittleEndian.PutUint32(b[4:], 2)
		out[path] = b
	}
	return out
}

// TestFuzzSeedsCompile makes sure the fuzz harness reaches Compile and EvalFloat for every
// seed: the synthesised weights must satisfy each seed program.
func TestFuzzSeedsCompile(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.mil"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := p.Compile(synthWeights(p)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
