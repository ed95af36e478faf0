package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// The benchmarks use the full-size SYNTH-1 Qwen2.5-0.5B bundle (about 1 GB), built once into
// $ANEPACK_BENCH_DIR (default <tmp>/anepack-bench) and reused by later runs:
//
//	go test -run '^$' -bench . -benchtime 1x ./remote/
//
// Pulls go through a real docker-registry on loopback and include everything a user waits
// for: ranged parallel download, sha256 of the whole bundle, fsync and the install rename.

var (
	fullOnce sync.Once
	fullPath string
	fullErr  error
)

func fullBundle(b *testing.B) string {
	b.Helper()
	fullOnce.Do(func() {
		dir := os.Getenv("ANEPACK_BENCH_DIR")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "anepack-bench")
		}
		if fullErr = os.MkdirAll(dir, 0o755); fullErr != nil {
			return
		}
		fullPath = filepath.Join(dir, "qwen2.5-0.5b.aneb")
		if _, err := os.Stat(fullPath); err == nil {
			return
		}
		start := time.Now()
		fullErr = buildBundle(context.Background(), dir, "qwen2.5-0.5b", 1, fullPath)
		fmt.Fprintf(os.Stderr, "built %s in %.1fs\n", fullPath, time.Since(start).Seconds())
	})
	if fullErr != nil {
		b.Fatal(fullErr)
	}
	return fullPath
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkCompress measures the zstd-frames compression of the full bundle (all CPUs).
func BenchmarkCompress(b *testing.B) {
	path := fullBundle(b)
	b.ResetTimer()
	var st CompressStats
	for range b.N {
		var err error
		_, st, err = CompressBundle(context.Background(), path, io.Discard, DefaultFrameSize, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(st.Plain)
	b.ReportMetric(st.Ratio(), "ratio")
	b.ReportMetric(st.MBps(), "MB/s")
	b.ReportMetric(float64(st.Frames), "frames")
}

// BenchmarkDecompress measures decoding every frame (what a compressed pull adds), all CPUs.
func BenchmarkDecompress(b *testing.B) {
	path := fullBundle(b)
	f, err := os.CreateTemp("", "frames-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	ix, st, err := CompressBundle(context.Background(), path, f, DefaultFrameSize, nil)
	if err != nil {
		b.Fatal(err)
	}
	comp, _ := os.ReadFile(f.Name())
	f.Close()
	dec, _ := newFrameDecoder(0)
	defer dec.close()
	units := ix.units()
	b.SetBytes(st.Plain)
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		next := make(chan *transfer.Unit, len(units))
		for _, u := range units {
			next <- u
		}
		close(next)
		for range 4 {
			wg.Go(func() {
				for u := range next {
					out, err := dec.Decode(comp[u.SOff:u.SOff+u.SN], u.N, u.Filter)
					if err != nil {
						b.Error(err)
						return
					}
					dec.Release(out)
				}
			})
		}
		wg.Wait()
	}
}

// benchPull pushes the full bundle once and pulls it b.N times into fresh stores.
func benchPull(b *testing.B, mode CompressMode) {
	path := fullBundle(b)
	reg := startRegistry(b, false)
	ctx := context.Background()
	popts, _ := benchOptions(b)
	popts.Compress = mode
	start := time.Now()
	pushed, err := Push(ctx, path, reg.ref("bench/qwen:v1"), popts)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("push (%s): %d bytes uploaded in %.2fs (%.0f MB/s of bundle), compressed %v ratio %.3f compress %.0f MB/s",
		mode, pushed.Uploaded, pushed.Elapsed.Seconds(), float64(pushed.Size)/1e6/time.Since(start).Seconds(), pushed.Compressed, pushed.Compression.Ratio(), pushed.Compression.MBps())
	b.SetBytes(pushed.Size)
	b.ResetTimer()
	var last *Pulled
	for range b.N {
		b.StopTimer()
		opts, _ := benchOptions(b)
		b.StartTimer()
		p, err := Pull(ctx, reg.ref("bench/qwen:v1"), opts)
		if err != nil {
			b.Fatal(err)
		}
		last = p
		b.StopTimer()
		os.RemoveAll(opts.Store.Dir())
		b.StartTimer()
	}
	b.ReportMetric(last.MBps(), "MB/s")
	b.ReportMetric(float64(last.Fetched)/1e6, "MB-fetched")
}

// benchOptions opens a fresh store in $ANEPACK_BENCH_STORE (default the temp dir): pointing
// it at a tmpfs (/dev/shm) separates the transfer's own speed from the disk's.
func benchOptions(b *testing.B) (Options, *logWriter) {
	dir, err := os.MkdirTemp(os.Getenv("ANEPACK_BENCH_STORE"), "bench-store-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	st, err := store.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	lw := &logWriter{t: b}
	return Options{Store: st, PlainHTTP: true, Log: lw}, lw
}

// BenchmarkPullOCIPlain: the ~1 GB bundle as a plain layer, 8 ranged streams, verified.
func BenchmarkPullOCIPlain(b *testing.B) { benchPull(b, CompressNever) }

// BenchmarkPullOCIZstd: the same bundle as zstd frames, decoded in parallel, verified.
func BenchmarkPullOCIZstd(b *testing.B) { benchPull(b, CompressAlways) }

// BenchmarkPushOCI measures push end to end (hash, compress when it pays, upload) into a
// new repository each time.
func BenchmarkPushOCI(b *testing.B) {
	for _, mode := range []CompressMode{CompressNever, CompressAuto} {
		b.Run(mode.String(), func(b *testing.B) {
			path := fullBundle(b)
			reg := startRegistry(b, false)
			var p *Pushed
			for i := range b.N {
				opts, _ := benchOptions(b)
				opts.Compress = mode
				var err error
				p, err = Push(context.Background(), path, reg.ref(fmt.Sprintf("bench/push%d:v1", i)), opts)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(p.Size)
			b.ReportMetric(float64(p.Uploaded)/1e6, "MB-uploaded")
			b.ReportMetric(float64(p.Size)/1e6/p.Elapsed.Seconds(), "MB/s")
		})
	}
}

// BenchmarkResolveCached measures what `anerun REF "prompt"` pays on every use after the
// first: hashing the whole stored bundle before handing it out.
func BenchmarkResolveCached(b *testing.B) {
	path := fullBundle(b)
	opts, _ := benchOptions(b)
	ref := "https://example.invalid/qwen.aneb"
	digest, _, err := store.HashFile(context.Background(), path, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := opts.Store.InstallFrom(context.Background(), path, store.Entry{Reference: ref, Digest: digest}); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for range b.N {
		if _, err := Resolve(context.Background(), ref, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPullHTTP pulls the bundle from a plain loopback HTTP server (Go's file serving)
// with --digest: the transfer engine without a registry in the way.
func BenchmarkPullHTTP(b *testing.B) {
	path := fullBundle(b)
	digest, _, _ := store.HashFile(context.Background(), path, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, path)
	}))
	defer srv.Close()
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	var last *Pulled
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		opts, _ := benchOptions(b)
		opts.Digest = digest
		b.StartTimer()
		p, err := Pull(context.Background(), srv.URL+"/qwen.aneb", opts)
		if err != nil {
			b.Fatal(err)
		}
		last = p
		b.StopTimer()
		os.RemoveAll(opts.Store.Dir())
		b.StartTimer()
	}
	b.ReportMetric(last.MBps(), "MB/s")
}
