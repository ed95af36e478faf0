package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/store"
)

// TestPullListRm pulls a bundle over http into a store in ANEPACK_HOME, lists it, and removes
// it, through the pull, list and rm commands (in process).
func TestPullListRm(t *testing.T) {
	b := bundle(t)
	data, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	digest, _, _ := store.HashFile(context.Background(), b, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "m.aneb", time.Unix(0, 0), bytes.NewReader(data))
	}))
	defer srv.Close()
	home := t.TempDir()
	t.Setenv("ANEPACK_HOME", home)
	url := srv.URL + "/models/m.aneb"

	exec := func(c interface {
		SetArgs([]string)
		Execute() error
	}, args ...string) error {
		c.SetArgs(args)
		return c.Execute()
	}
	var out bytes.Buffer
	pull := newPullCmd()
	pull.SetOut(&out)
	if err := exec(pull, url, "--digest", digest, "-q"); err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSpace(out.String())
	if path != filepath.Join(home, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")) {
		t.Fatalf("pull printed %q", path)
	}

	out.Reset()
	list := newListCmd()
	list.SetOut(&out)
	if err := exec(list, "--json"); err != nil {
		t.Fatal(err)
	}
	var entries []store.Entry
	if err := json.Unmarshal(out.Bytes(), &entries); err != nil || len(entries) != 1 || entries[0].Reference != url || entries[0].Digest != digest {
		t.Fatalf("list --json: %s (%v)", out.String(), err)
	}
	out.Reset()
	list = newListCmd()
	list.SetOut(&out)
	if err := exec(list); err != nil || !strings.Contains(out.String(), url) || !strings.Contains(out.String(), shortID(digest)) || !strings.Contains(out.String(), "pulled (https)") {
		t.Fatalf("list: %q, %v", out.String(), err)
	}

	out.Reset()
	rm := newRmCmd()
	rm.SetOut(&out)
	if err := exec(rm, url); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed "+url) || !strings.Contains(out.String(), "deleted "+digest) {
		t.Errorf("rm printed %q", out.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the bundle is still there after rm")
	}
	rm = newRmCmd()
	rm.SetOut(&out)
	if err := exec(rm, url); err == nil || !strings.Contains(err.Error(), "not in the store") {
		t.Errorf("rm of a removed reference: %v", err)
	}
}
