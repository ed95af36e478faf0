package format

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// qwenShapedManifest returns a manifest the size of a packed Qwen2.5-0.5B: 290 tensor views
// and 240 programs (about 150 KB of indented JSON).
func qwenShapedManifest() *Manifest {
	m := testManifest()
	m.Tensors = nil
	for l := range 24 {
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "self_attn.q_proj", "self_attn.k_proj",
			"self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "self_attn.q_proj.bias",
			"self_attn.k_proj.bias", "self_attn.v_proj.bias"} {
			m.Tensors = append(m.Tensors, Tensor{Name: fmt.Sprintf("model.layers.%d.%s.weight", l, n), DType: "f16",
				Shape: []int{896, 4864}, Parts: []TensorPart{{Section: fmt.Sprintf("blob/layers.%d.mlp", l), Offset: 128, Rows: 896, Size: 8716288}}})
		}
	}
	for l := range 24 {
		for _, k := range []string{"attn_qkv", "attn_o", "mlp"} {
			for _, s := range []int{32, 64, 128} {
				m.Programs = append(m.Programs, Program{Name: fmt.Sprintf("layers.%d.%s.s%d", l, k, s), Kind: k, Layer: l, Seq: s,
					MIL:     fmt.Sprintf("mil/layers.%d.%s.s%d", l, k, s),
					Weights: []ProgramWeight{{Path: "@model_path/weights/" + k + ".bin", Section: fmt.Sprintf("blob/layers.%d.%s", l, k)}},
					Inputs:  []ProgramIO{{Name: "x", DType: "fp16", Shape: []int{1, 896, 1, s}}},
					Outputs: []ProgramIO{{Name: "y", DType: "fp16", Shape: []int{1, 896, 1, s}}}})
			}
		}
	}
	return m
}

// BenchmarkOpen measures Open + Close (mmap, header, table, manifest JSON, root digest).
func BenchmarkOpen(b *testing.B) {
	for _, bc := range []struct {
		name     string
		sections int
		m        *Manifest
	}{{"small", 4, testManifest()}, {"qwen-shaped", 400, qwenShapedManifest()}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "m.aneb")
			var secs []testSection
			for i := range bc.sections {
				secs = append(secs, testSection{KindMIL, fmt.Sprintf("mil/%d", i), []byte("program")})
			}
			writeBundle(b, path, secs, bc.m)
			bun, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			manifestLen := bun.Header().ManifestLength
			bun.Close()
			for b.Loop() {
				bun, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				bun.Close()
			}
			b.ReportMetric(float64(manifestLen), "manifest-bytes")
		})
	}
}

// bigBundle writes a 256 MiB bundle shaped like a model: 24 sections of 10 MiB and 16 MiB of
// small ones.
func bigBundle(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "big.aneb")
	w, err := Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	for l := range 24 {
		sw, err := w.Begin(KindBlob, fmt.Sprintf("blob/layers.%d", l))
		if err != nil {
			b.Fatal(err)
		}
		for range 10 {
			sw.Write(chunk)
		}
		if _, err := w.End(); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 64 {
		if _, err := w.Add(KindTensors, fmt.Sprintf("tensors/%d", i), chunk[:256<<10]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Commit(testManifest()); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkVerify measures Verify (every section digest and the padding) on a 256 MiB bundle
// in the page cache.
func BenchmarkVerify(b *testing.B) {
	bun, err := Open(bigBundle(b))
	if err != nil {
		b.Fatal(err)
	}
	defer bun.Close()
	b.SetBytes(bun.Size())
	for b.Loop() {
		if err := bun.Verify(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileDigest measures the plain sha256 of the same 256 MiB bundle (one core).
func BenchmarkFileDigest(b *testing.B) {
	bun, err := Open(bigBundle(b))
	if err != nil {
		b.Fatal(err)
	}
	defer bun.Close()
	b.SetBytes(bun.Size())
	for b.Loop() {
		if _, err := bun.FileDigest(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite measures writing a 256 MiB bundle with 1 MiB writes, fsync and rename
// included.
func BenchmarkWrite(b *testing.B) {
	dir := b.TempDir()
	chunk := make([]byte, 1<<20)
	b.SetBytes(256 << 20)
	for b.Loop() {
		w, err := Create(filepath.Join(dir, "w.aneb"))
		if err != nil {
			b.Fatal(err)
		}
		for l := range 16 {
			sw, err := w.Begin(KindBlob, fmt.Sprintf("blob/%d", l))
			if err != nil {
				b.Fatal(err)
			}
			for range 16 {
				if _, err := sw.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.End(); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Commit(testManifest()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewReader measures the checks of Open without the system calls: header, table,
// root digest and manifest JSON, from memory.
func BenchmarkNewReader(b *testing.B) {
	for _, bc := range []struct {
		name     string
		sections int
		m        *Manifest
	}{{"small", 4, testManifest()}, {"qwen-shaped", 400, qwenShapedManifest()}} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "m.aneb")
			var secs []testSection
			for i := range bc.sections {
				secs = append(secs, testSection{KindMIL, fmt.Sprintf("mil/%d", i), []byte("program")})
			}
			writeBundle(b, path, secs, bc.m)
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := openBytes(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
