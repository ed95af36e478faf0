package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/store"
)

// TestListStoreStates runs `anerun list` on stores in three states. A store that does not exist
// yet holds no bundles: the listing is empty and nothing is created (it used to create the
// store, and failed where it could not). A store on read-only media is listed without writing
// anything to it (it used to recreate its work area first). A store that cannot be read is an
// error that names what could not be read.
func TestListStoreStates(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "never-pulled")
	t.Setenv("ANEPACK_HOME", missing)
	r := anerun(t, "", "list")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "NAME  DTYPE  SIZE  SOURCE  ID  ADDED" {
		t.Errorf("missing store: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := anerun(t, "", "list", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("missing store, --json: exit %d, stdout %q", r.code, r.stdout)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("listing created the store: %v", err)
	}

	// A store with one bundle, then stripped of what only writers need (its work area and
	// lock file), as on read-only media: listing must not need them back.
	home := t.TempDir()
	st, err := store.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	digest, _, _ := store.HashFile(context.Background(), bundle(t), nil)
	if _, err := st.InstallFrom(context.Background(), bundle(t), store.Entry{Reference: "https://example.com/m.aneb", Digest: digest}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(home, "tmp"))
	os.Remove(filepath.Join(home, "lock"))
	t.Setenv("ANEPACK_HOME", home)
	r = anerun(t, "", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "https://example.com/m.aneb") || !strings.Contains(r.stdout, shortID(digest)) {
		t.Errorf("read-only store: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{"tmp", "lock"} {
		if _, err := os.Lstat(filepath.Join(home, p)); !os.IsNotExist(err) {
			t.Errorf("listing wrote %s into the store", p)
		}
	}

	// refs is not a directory: the store cannot be read.
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "refs"), []byte("x"), 0o644)
	t.Setenv("ANEPACK_HOME", broken)
	r = anerun(t, "", "list")
	want := "cannot read " + filepath.Join(broken, "refs")
	if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("unreadable store: exit %d, stderr %q; want one line with %q", r.code, r.stderr, want)
	}
}
