package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// pushPlain pushes the tiny bundle uncompressed and returns its digest.
func pushPlain(t *testing.T, reg *testRegistry, repoTag string, mode CompressMode) *Pushed {
	t.Helper()
	opts, _ := testOptions(t)
	opts.Compress = mode
	p, err := Push(context.Background(), tinyBundle(t), reg.ref(repoTag), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPullCutResume cuts the connection in the middle of blob responses: the pull resumes
// each cut chunk (or frame) from where it stopped and finishes in the same run.
func TestPullCutResume(t *testing.T) {
	reg := startRegistry(t, false)
	for _, mode := range []CompressMode{CompressNever, CompressAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			pushed := pushPlain(t, reg, "anepack/tiny:"+mode.String(), mode)
			proxy := newFaultProxy(t, "http://"+reg.addr)
			const cut, times = 1 << 20, 3
			proxy.setCuts(cut, times)
			opts, lw := testOptions(t)
			opts.ChunkSize, opts.Jobs = 8<<20, 2
			opts.FrameSize = 4 << 20
			p, err := Pull(context.Background(), "oci://"+proxy.addr+"/anepack/tiny:"+mode.String(), opts)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, tinyBundle(t), p.Path)
			if n := strings.Count(lw.String(), "retrying"); n != times {
				t.Errorf("%d retries logged, want %d", n, times)
			}
			layer := pushed.Size
			if pushed.Compressed {
				layer = int64(float64(pushed.Size) * pushed.Compression.Ratio())
			}
			// Each cut costs at most what was in flight on that request, not a restart.
			if sent := proxy.blobBytes.Load(); sent > layer+times*cut+1<<20 {
				t.Errorf("the proxy sent %d blob bytes for a %d-byte layer with %d cuts of %d", sent, layer, times, cut)
			}
		})
	}
}

// TestPullResumeNewProcess kills a pulling process half way and pulls again in a new
// process: only the missing bytes are fetched.
func TestPullResumeNewProcess(t *testing.T) {
	reg := startRegistry(t, false)
	pushed := pushPlain(t, reg, "anepack/tiny:v1", CompressNever)
	proxy := newFaultProxy(t, "http://"+reg.addr)
	proxy.setRate(6 << 20) // 36 MiB take ~6 s
	home := t.TempDir()
	ref := "oci://" + proxy.addr + "/anepack/tiny:v1"

	child := helperCmd(t, "pull", home, ref)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(home, "tmp", strings.TrimPrefix(pushed.BundleDigest, "sha256:")+".part.json")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, ok := readState(statePath); ok && st >= pushed.Size/4 {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatalf("the first pull made no progress in 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	child.Process.Kill() // SIGKILL: no chance to clean up or save anything more
	child.Wait()
	st, _ := store.Open(home)
	if v := visible(t, st); len(v) != 0 {
		t.Fatalf("a killed pull left %v visible", v)
	}

	proxy.setRate(0)
	proxy.blobBytes.Store(0)
	out, err := helperCmd(t, "pull", home, ref).CombinedOutput()
	if err != nil {
		t.Fatalf("second process: %v\n%s", err, out)
	}
	var res Pulled
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&res); err != nil {
		t.Fatalf("second process printed %q: %v", out, err)
	}
	if res.Resumed < pushed.Size/4 || res.Fetched != res.Entry.Size-res.Resumed {
		t.Fatalf("second process: resumed %d, fetched %d of %d; want at least a quarter resumed and only the rest fetched", res.Resumed, res.Fetched, res.Entry.Size)
	}
	// The proxy also sent the config blob (a few KiB).
	if sent := proxy.blobBytes.Load(); sent < res.Fetched || sent > res.Fetched+64<<10 {
		t.Errorf("the proxy sent %d blob bytes, the pull counted %d of the bundle", sent, res.Fetched)
	}
	sameFile(t, tinyBundle(t), res.Path)
	t.Logf("killed at %.0f%%; the new process fetched the remaining %d bytes", 100*float64(res.Resumed)/float64(res.Entry.Size), res.Fetched)
}

// readState sums the bytes a transfer's state file records.
func readState(path string) (int64, bool) {
	st, err := transfer.ReadState(path)
	if err != nil {
		return 0, false
	}
	var n int64
	for _, u := range st.Units {
		n += u[2]
	}
	return n, true
}

// helperCmd re-executes the test binary as a helper process (TestHelperProcess).
func helperCmd(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "DIST_HELPER="+strings.Join(args, "\x1f"))
	return cmd
}

// TestHelperProcess runs in a child process started by helperCmd.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv("DIST_HELPER")
	if spec == "" {
		return // not a helper: nothing to do
	}
	args := strings.Split(spec, "\x1f")
	switch args[0] {
	case "pull": // pull HOME REF: pull into the store at HOME, print the result as JSON
		st, err := store.Open(args[1])
		if err != nil {
			t.Fatal(err)
		}
		p, err := Pull(context.Background(), args[2], Options{Store: st, PlainHTTP: true, Backoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		json.NewEncoder(os.Stdout).Encode(p)
	case "diskfull":
		helperDiskFull(t, args[1:])
	default:
		t.Fatalf("unknown helper %q", args[0])
	}
}

// TestPullCorruptBlob corrupts the stored blob inside the registry: the pull fails with a
// digest mismatch (plain layer) or an undecodable frame (compressed layer), and nothing is
// installed.
func TestPullCorruptBlob(t *testing.T) {
	reg := startRegistry(t, false)
	ctx := context.Background()
	flip := func(path string, at int64) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := []byte{0}
		f.ReadAt(b, at)
		b[0] ^= 0x10
		f.WriteAt(b, at)
	}

	plain := pushPlain(t, reg, "anepack/tiny:plain", CompressNever)
	flip(reg.blobFile(plain.BundleDigest), plain.Size/2)
	opts, lw := testOptions(t)
	_, err := Pull(ctx, reg.ref("anepack/tiny:plain"), opts)
	if err == nil || !strings.Contains(err.Error(), "digest mismatch") || !strings.Contains(err.Error(), "nothing was installed") {
		t.Fatalf("pull of a corrupt blob: %v", err)
	}
	if !strings.Contains(lw.String(), "downloading again") {
		t.Errorf("no second download logged")
	}
	if v := visible(t, opts.Store); len(v) != 0 {
		t.Errorf("a corrupt pull left %v", v)
	}
	if parts, _ := filepath.Glob(filepath.Join(opts.Store.TempDir(), "*.part*")); len(parts) != 0 {
		t.Errorf("a corrupt download was kept for resuming: %v", parts)
	}

	comp := pushPlain(t, reg, "anepack/tiny:zstd", CompressAlways)
	var m struct {
		Layers []struct{ Digest string }
	}
	json.Unmarshal(getBody(t, "http://"+reg.addr+"/v2/anepack/tiny/manifests/zstd", map[string]string{"Accept": "application/vnd.oci.image.manifest.v1+json"}), &m)
	layer := reg.blobFile(m.Layers[0].Digest)
	fi, _ := os.Stat(layer)
	flip(layer, fi.Size()/3)
	copts, _ := testOptions(t)
	copts.Retries = 2
	_, err = Pull(ctx, reg.ref("anepack/tiny:zstd"), copts)
	if err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("pull of a corrupt compressed layer: %v", err)
	}
	if v := visible(t, copts.Store); len(v) != 0 {
		t.Errorf("a corrupt pull left %v", v)
	}
	_ = comp
}

// TestPullInterrupted cancels a pull (Ctrl-C): nothing is visible in the store, and the next
// pull resumes.
func TestPullInterrupted(t *testing.T) {
	reg := startRegistry(t, false)
	pushed := pushPlain(t, reg, "anepack/tiny:v1", CompressNever)
	proxy := newFaultProxy(t, "http://"+reg.addr)
	proxy.setRate(8 << 20)
	opts, _ := testOptions(t)
	ref := "oci://" + proxy.addr + "/anepack/tiny:v1"
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for proxy.blobBytes.Load() < pushed.Size/3 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Pull(ctx, ref, opts)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "resumes it") {
		t.Fatalf("interrupted pull: %v", err)
	}
	if v := visible(t, opts.Store); len(v) != 0 {
		t.Fatalf("an interrupted pull left %v visible", v)
	}
	proxy.setRate(0)
	p, err := Pull(context.Background(), ref, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed == 0 {
		t.Error("the second pull started over")
	}
	sameFile(t, tinyBundle(t), p.Path)
}

// TestConcurrentPulls pulls the same bundle twice at once into one store (two stores opened
// on one directory, as two processes would): one downloads, the other waits for it and then
// finds the bundle installed.
func TestConcurrentPulls(t *testing.T) {
	reg := startRegistry(t, false)
	pushPlain(t, reg, "anepack/tiny:v1", CompressNever)
	proxy := newFaultProxy(t, "http://"+reg.addr)
	proxy.setRate(40 << 20) // about a second, so the two overlap
	dir := t.TempDir()
	ref := "oci://" + proxy.addr + "/anepack/tiny:v1"
	type res struct {
		p   *Pulled
		err error
	}
	out := make(chan res, 2)
	for range 2 {
		go func() {
			st, err := store.Open(dir)
			if err != nil {
				out <- res{err: err}
				return
			}
			p, err := Pull(context.Background(), ref, Options{Store: st, PlainHTTP: true, Backoff: time.Millisecond})
			out <- res{p, err}
		}()
	}
	a, b := <-out, <-out
	if a.err != nil || b.err != nil {
		t.Fatalf("pulls: %v, %v", a.err, b.err)
	}
	if a.p.Cached == b.p.Cached {
		t.Errorf("cached: %v and %v; want one download and one wait", a.p.Cached, b.p.Cached)
	}
	if sent := proxy.blobBytes.Load(); sent > a.p.Entry.Size+64<<10 {
		t.Errorf("the bundle was downloaded twice (%d bytes)", sent)
	}
	sameFile(t, tinyBundle(t), a.p.Path)
}
