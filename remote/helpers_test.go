package remote

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/store"
)

// logWriter collects log lines for assertions and shows them with -v.
type logWriter struct {
	t  testing.TB
	mu sync.Mutex
	b  strings.Builder
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	l.t.Logf("log: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *logWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testOptions returns options on a fresh store, with fast retries.
func testOptions(t testing.TB) (Options, *logWriter) {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lw := &logWriter{t: t}
	return Options{Store: st, PlainHTTP: true, Backoff: time.Millisecond, Log: lw, StallTimeout: 5 * time.Second}, lw
}

// sameFile fails unless the two files hold the same bytes.
func sameFile(t testing.TB, a, b string) {
	t.Helper()
	da, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(da, db) {
		t.Fatalf("%s and %s differ (%d and %d bytes)", a, b, len(da), len(db))
	}
}

// visible lists what a store shows: blobs and refs (the work area does not count).
func visible(t testing.TB, st *store.Store) []string {
	t.Helper()
	var out []string
	for _, d := range []string{"blobs/sha256", "refs"} {
		ents, err := os.ReadDir(filepath.Join(st.Dir(), d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out = append(out, d+"/"+e.Name())
		}
	}
	return out
}

// getJSON fetches a URL's body (for looking at what a registry stored).
func getBody(t testing.TB, url string, header map[string]string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b
}

// bundleTime is the Last-Modified time test servers give the bundle.
var bundleTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
