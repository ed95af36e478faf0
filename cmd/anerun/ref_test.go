package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anepack/anepack/store"
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

// TestRunReferenceFlags checks that --digest and --plain-http reach `anerun REF "prompt"`, not
// only `anerun pull`: a wrong --digest refuses the download, the right one runs it, and
// --plain-http sends an oci:// reference's registry requests over plain http (the loopback
// server below speaks nothing else, so without the flag it never sees a registry request).
func TestRunReferenceFlags(t *testing.T) {
	path := bundle(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	digest, _, err := store.HashFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var registryCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/") {
			registryCalls.Add(1)
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "m.aneb", time.Unix(0, 0), bytes.NewReader(data))
	}))
	defer srv.Close()
	t.Setenv("ANEPACK_HOME", t.TempDir())
	ref := srv.URL + "/models/m.aneb"

	wrong := "sha256:" + strings.Repeat("0", 64)
	if r := anerun(t, "", ref, "--raw", "Once", "-n", "4", "--digest", wrong); r.code == 0 || !strings.Contains(r.stderr, wrong) {
		t.Errorf("a wrong --digest: exit %d, stderr %q; want a refusal naming it", r.code, r.stderr)
	}
	if r := anerun(t, "", ref, "--raw", "Once", "-n", "4", "--digest", digest); r.code != 0 || r.stdout == "" {
		t.Errorf("the right --digest: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	oci := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/ns/model:v1"
	anerun(t, "", oci, "hi")
	if n := registryCalls.Load(); n != 0 {
		t.Fatalf("without --plain-http the registry got %d plain-http requests", n)
	}
	r := anerun(t, "", oci, "hi", "--plain-http")
	if r.code == 0 || registryCalls.Load() == 0 {
		t.Errorf("--plain-http: exit %d, %d registry requests over http; stderr %q", r.code, registryCalls.Load(), r.stderr)
	}
	if r := anerun(t, "", path, "hi", "--digest", digest); r.code == 0 || !strings.Contains(r.stderr, "apply to a reference") {
		t.Errorf("--digest with a local file: exit %d, stderr %q", r.code, r.stderr)
	}
}
