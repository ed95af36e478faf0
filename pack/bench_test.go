package pack

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPackQwen05B packs the full-size Qwen2.5-0.5B SYNTH-1 checkpoint (988 MB of BF16,
// generated once into a temp dir) to FP16. b.SetBytes counts the safetensors bytes read.
//
//	go test -run '^$' -bench PackQwen05B -benchtime 3x ./pack
func BenchmarkPackQwen05B(b *testing.B) {
	dir := synthCheckpoint(b, "qwen2.5-0.5b", 1)
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "q.aneb")
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Pack(context.Background(), dir, Options{Output: out, Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}
