package remote

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/stall"
	"github.com/anepack/anepack/store"
)

// fileServer serves one file over TLS with Range support, counting requests.
type fileServer struct {
	srv      *httptest.Server
	data     []byte
	etag     atomic.Value // string
	noRange  atomic.Bool
	requests atomic.Int64
	mu       sync.Mutex
	ranges   []string
	// onGet, if set, runs before each GET is answered.
	onGet func(n int64)
	// trickles is how many GETs (-1: all) send their body past trickleAt one byte every
	// trickleEvery, as a server that never stops but never gets anywhere.
	trickles     atomic.Int64
	trickleAt    int64
	trickleEvery time.Duration
}

// trickleWriter passes the first at bytes of a body through, then writes one byte every
// every, flushing each, until the client goes away.
type trickleWriter struct {
	http.ResponseWriter
	r     *http.Request
	at    int64
	every time.Duration
	sent  int64
}

func (w *trickleWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := len(p)
		if w.sent >= w.at {
			k = 1
			select {
			case <-time.After(w.every):
			case <-w.r.Context().Done():
				return n, w.r.Context().Err()
			}
		} else {
			k = int(min(int64(k), w.at-w.sent))
		}
		m, err := w.ResponseWriter.Write(p[:k])
		n, w.sent, p = n+m, w.sent+int64(m), p[m:]
		if err != nil {
			return n, err
		}
		if w.sent > w.at {
			w.ResponseWriter.(http.Flusher).Flush()
		}
	}
	return n, nil
}

func newFileServer(t testing.TB, data []byte) *fileServer {
	fs := &fileServer{data: data}
	fs.etag.Store(`"v1"`)
	fs.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := fs.requests.Add(1)
		if r.Method == http.MethodGet && fs.onGet != nil {
			fs.onGet(n)
		}
		fs.mu.Lock()
		fs.ranges = append(fs.ranges, r.Method+" "+r.Header.Get("Range"))
		fs.mu.Unlock()
		if fs.noRange.Load() {
			// A server without Range support: the whole file, always.
			w.Header().Set("Content-Length", strconv.Itoa(len(fs.data)))
			if r.Method == http.MethodGet {
				w.Write(fs.data)
			}
			return
		}
		w.Header().Set("ETag", fs.etag.Load().(string))
		if r.Method == http.MethodGet && fs.trickles.Load() != 0 {
			fs.trickles.Add(-1)
			w = &trickleWriter{ResponseWriter: w, r: r, at: fs.trickleAt, every: fs.trickleEvery}
		}
		http.ServeContent(w, r, "model.aneb", bundleTime, bytes.NewReader(fs.data))
	}))
	t.Cleanup(fs.srv.Close)
	return fs
}

func (fs *fileServer) url() string { return fs.srv.URL + "/models/model.aneb" }

func httpsOptions(t testing.TB, fs *fileServer) (Options, *logWriter) {
	opts, lw := testOptions(t)
	opts.HTTPClient = fs.srv.Client()
	return opts, lw
}

func TestHTTPSPull(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	data, _ := os.ReadFile(bundle)
	digest, _, _ := store.HashFile(ctx, bundle, nil)
	fs := newFileServer(t, data)

	opts, _ := httpsOptions(t, fs)
	opts.Digest = digest
	opts.ChunkSize, opts.Jobs = 4<<20, 3
	p, err := Pull(ctx, fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	if p.Entry.Digest != digest || p.Entry.Reference != fs.url() || p.Entry.Transfer != "https" {
		t.Errorf("entry %+v", p.Entry)
	}
	chunks := int((int64(len(data)) + opts.ChunkSize - 1) / opts.ChunkSize)
	if got := fs.requests.Load(); got != int64(chunks)+1 { // HEAD + one GET per chunk
		t.Errorf("%d requests for %d chunks", got, chunks)
	}
	// With the digest known and the bundle in the store, nothing is requested.
	before := fs.requests.Load()
	again, err := Pull(ctx, fs.url(), opts)
	if err != nil || !again.Cached || fs.requests.Load() != before {
		t.Errorf("second pull: %+v, %v, %d new requests", again, err, fs.requests.Load()-before)
	}

	// Without a digest the bundle's own digests are checked.
	plain, _ := httpsOptions(t, fs)
	p, err = Pull(ctx, fs.url(), plain)
	if err != nil || p.Entry.Digest != digest {
		t.Fatalf("pull without --digest: %+v, %v", p, err)
	}

	// A wrong digest: nothing installed.
	wrong, _ := httpsOptions(t, fs)
	wrong.Digest = "sha256:" + strings.Repeat("ab", 32)
	if _, err := Pull(ctx, fs.url(), wrong); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("pull with a wrong --digest: %v", err)
	}
	if v := visible(t, wrong.Store); len(v) != 0 {
		t.Errorf("left %v", v)
	}
	bad, _ := httpsOptions(t, fs)
	bad.Digest = "sha256:xyz"
	if _, err := Pull(ctx, fs.url(), bad); err == nil || !strings.Contains(err.Error(), "--digest") {
		t.Errorf("malformed --digest: %v", err)
	}
}

// TestHTTPSNotABundle serves something else (an HTML error page with 200): refused, nothing
// installed.
func TestHTTPSNotABundle(t *testing.T) {
	fs := newFileServer(t, []byte(strings.Repeat("<html>not found</html>\n", 5000)))
	opts, _ := httpsOptions(t, fs)
	_, err := Pull(context.Background(), fs.url(), opts)
	if err == nil || !strings.Contains(err.Error(), "not a valid .aneb bundle") {
		t.Fatalf("pull of a non-bundle: %v", err)
	}
	if v := visible(t, opts.Store); len(v) != 0 {
		t.Errorf("left %v", v)
	}
}

// TestHTTPSNoRange serves the whole file to every request: the pull falls back to one stream.
func TestHTTPSNoRange(t *testing.T) {
	bundle := tinyBundle(t)
	data, _ := os.ReadFile(bundle)
	fs := newFileServer(t, data)
	fs.noRange.Store(true)
	opts, lw := httpsOptions(t, fs)
	opts.ChunkSize = 4 << 20
	p, err := Pull(context.Background(), fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	if !strings.Contains(lw.String(), "whole file instead of a range") {
		t.Errorf("no fallback logged")
	}
}

// TestHTTPSFileChanged changes the file's ETag after the first ranged request: the pull
// notices (If-Range answered with the whole file) and starts over.
func TestHTTPSFileChanged(t *testing.T) {
	bundle := tinyBundle(t)
	data, _ := os.ReadFile(bundle)
	fs := newFileServer(t, data)
	fs.onGet = func(n int64) {
		if n == 3 {
			fs.etag.Store(`"v2"`)
		}
	}
	opts, lw := httpsOptions(t, fs)
	opts.ChunkSize, opts.Jobs = 4<<20, 1
	p, err := Pull(context.Background(), fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	if !strings.Contains(lw.String(), "changed on the server") {
		t.Errorf("the change was not noticed")
	}
}

// TestHTTPSTrickle: a server that trickles (a byte every 10 ms once 64 KiB are out) is judged
// stalled after one window, because it brings less than MinRate, and the pull resumes; one
// that trickles on every connection makes the pull fail within seconds, as stalled (a stalled
// attempt does not reset the retry count, whatever bytes it brought). The stall timer used to
// restart on every byte, so a trickle was never a stall.
func TestHTTPSTrickle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bundle := tinyBundle(t)
	data, _ := os.ReadFile(bundle)
	fs := newFileServer(t, data)
	fs.trickleAt, fs.trickleEvery = 64<<10, 10*time.Millisecond
	fs.trickles.Store(1)
	opts, lw := httpsOptions(t, fs)
	opts.StallTimeout = 300 * time.Millisecond // MinRate 1 KiB/s: 307 bytes a window
	start := time.Now()
	p, err := Pull(ctx, fs.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	if !strings.Contains(lw.String(), "below the minimum of 307") {
		t.Errorf("the trickle was not logged as too slow")
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v", took)
	}

	fs.trickles.Store(-1)
	opts2, _ := httpsOptions(t, fs)
	opts2.StallTimeout = 200 * time.Millisecond
	start = time.Now()
	_, err = Pull(ctx, fs.url(), opts2)
	if err == nil || !errors.Is(err, stall.ErrStalled) || ctx.Err() != nil {
		t.Fatalf("got %v; want the pull to fail as stalled", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v to give up", took)
	}
}
