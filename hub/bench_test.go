package hub

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
)

// writeBigFile writes size deterministic, incompressible bytes to path
// (a 4 MiB random block, each copy stamped with its index so no two are
// equal).
func writeBigFile(tb testing.TB, path string, size int64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	block := randBytes(42, 4<<20)
	for off := int64(0); off < size; off += int64(len(block)) {
		binary.LittleEndian.PutUint64(block, uint64(off))
		n := min(int64(len(block)), size-off)
		if _, err := f.Write(block[:n]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDownload1GB downloads a 1 GiB LFS file from the fake Hub's CDN
// on loopback (served from a disk file with sendfile) into a fresh cache,
// with the sha256 check, the fsync and the rename into blobs/: everything
// Snapshot does. "stream" is one connection; "chunks" is the default
// (64 MiB ranged chunks over Jobs=8 connections). The cache is created under
// HUB_BENCH_DIR if set (e.g. /dev/shm to take the disk out), else in the
// test's temp dir.
func BenchmarkDownload1GB(b *testing.B) {
	const size = 1 << 30
	src := filepath.Join(b.TempDir(), "model.safetensors")
	writeBigFile(b, src, size)
	srv := hubtest.New(b, hubtest.Options{})
	srv.MustAddRepo(b, hubtest.Repo{ID: "Org/Big", Files: []hubtest.File{{Path: "model.safetensors", Disk: src}}})
	base := os.Getenv("HUB_BENCH_DIR")
	if base == "" {
		base = b.TempDir()
	}
	for _, mode := range []struct {
		name  string
		chunk int64
	}{{"stream", -1}, {"chunks", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cache, err := os.MkdirTemp(base, "hub-bench-")
				if err != nil {
					b.Fatal(err)
				}
				c := &Client{Endpoint: srv.URL, CacheDir: cache, ChunkSize: mode.chunk}
				b.StartTimer()
				s, err := c.Snapshot(context.Background(), "Org/Big", "", nil)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				if f, _ := s.File("model.safetensors"); f.Size != size {
					b.Fatalf("downloaded %d bytes", f.Size)
				}
				os.RemoveAll(cache)
				b.StartTimer()
			}
		})
	}
}

// benchSizes are the file sizes TestPeakRSS compares; HUB_RSS_SIZES
// (comma-separated MiB) overrides them, e.g. "16,1024" to add a 1 GiB file.
func benchSizes(t *testing.T) []int64 {
	sizes := []int64{16 << 20, 128 << 20}
	if v := os.Getenv("HUB_RSS_SIZES"); v != "" {
		sizes = nil
		for _, s := range splitComma(v) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("HUB_RSS_SIZES=%q", v)
			}
			sizes = append(sizes, n<<20)
		}
	}
	return sizes
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
