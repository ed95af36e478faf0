package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunReference runs `anerun <url> "prompt"` through the binary: the first run pulls the
// bundle into the store and generates; the second run, with the server gone, reuses the store
// and generates the same text.
func TestRunReference(t *testing.T) {
	path := bundle(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		http.ServeContent(w, r, "m.aneb", time.Unix(0, 0), bytes.NewReader(data))
	}))
	t.Setenv("ANEPACK_HOME", t.TempDir())
	ref := srv.URL + "/models/m.aneb"
	local := anerun(t, "", path, "--raw", "Once upon a time", "-n", "8")
	first := anerun(t, "", ref, "--raw", "Once upon a time", "-n", "8")
	if first.code != 0 || first.stdout != local.stdout {
		t.Fatalf("first run: exit %d, stdout %q (local %q), stderr %s", first.code, first.stdout, local.stdout, first.stderr)
	}
	if gets.Load() == 0 {
		t.Fatal("the bundle was not downloaded")
	}
	srv.Close()
	second := anerun(t, "", ref, "--raw", "Once upon a time", "-n", "8")
	if second.code != 0 || second.stdout != local.stdout {
		t.Fatalf("second run (server gone): exit %d, stdout %q, stderr %s", second.code, second.stdout, second.stderr)
	}
	if bad := anerun(t, "", "oci://", "hi"); bad.code == 0 || !strings.Contains(bad.stderr, "oci://") {
		t.Errorf("malformed reference: exit %d, %q", bad.code, bad.stderr)
	}
}
