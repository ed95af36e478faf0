//go:build unix

package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tempFiles lists the store's work area.
func tempFiles(t *testing.T, st *Store) []string {
	t.Helper()
	ents, err := os.ReadDir(st.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestReimportLeavesNoLink imports a bundle file twice, under two names, and installs the same
// file again from outside (as a Hub download is): the store's blob is already a hard link of
// the file, rename(2) of one link onto another of the same file does nothing, and each of these
// used to leave a tmp/import-* (install-*) link holding the bundle's bytes.
func TestReimportLeavesNoLink(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "mine.aneb")
	os.WriteFile(src, bytes.Repeat([]byte("a bundle, really "), 1000), 0o644)
	ctx := context.Background()
	var e Entry
	for _, name := range []string{"mine:f16", "mine:f16", "again:f16"} {
		if e, _, err = st.Import(ctx, src, Entry{Reference: name}, nil); err != nil {
			t.Fatal(err)
		}
		if left := tempFiles(t, st); len(left) != 0 {
			t.Fatalf("importing as %s left %v in the work area", name, left)
		}
	}
	if _, err := st.InstallFrom(ctx, src, Entry{Digest: e.Digest}); err != nil {
		t.Fatal(err)
	}
	if left := tempFiles(t, st); len(left) != 0 {
		t.Fatalf("installing the same file again left %v in the work area", left)
	}
	if fi, _ := os.Stat(src); links(fi) != 2 {
		t.Errorf("the file has %d links; want 2 (itself and the blob)", links(fi))
	}
}

// TestRemoveReportsFreedSpace removes bundles and checks what is reported as freed against
// what the disk gets back: a copied bundle frees its size; an imported one (a hard link of a
// file outside the store) frees nothing and says the bytes stay; links an older import left in
// the work area go with the blob, so removing it does free the bytes.
func TestRemoveReportsFreedSpace(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, bytes.Repeat([]byte(text), 1000), 0o644)
		return p
	}

	tmp := filepath.Join(st.TempDir(), "pack-1.aneb")
	os.WriteFile(tmp, bytes.Repeat([]byte("copied "), 1000), 0o644)
	if _, _, err := st.Add(ctx, tmp, Entry{Reference: "copied:f16"}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := st.Remove(ctx, "copied:f16")
	if err != nil || r.Freed != 7000 || r.Kept != 0 {
		t.Fatalf("removing a bundle the store alone holds: %+v, %v; want 7000 bytes freed", r, err)
	}

	src := write("imported.aneb", "imported ")
	if _, _, err := st.Import(ctx, src, Entry{Reference: "imported:f16"}, nil); err != nil {
		t.Fatal(err)
	}
	r, err = st.Remove(ctx, "imported:f16")
	if err != nil || r.Freed != 0 || r.Kept != 9000 || len(r.Blobs) != 1 {
		t.Fatalf("removing an imported bundle whose file is still there: %+v, %v; want 0 freed, 9000 kept", r, err)
	}

	// What an import used to leave: a link in tmp/. The original file is gone, so the blob and
	// that link are the last two.
	src = write("leaked.aneb", "leaked ")
	e, p, err := st.Import(ctx, src, Entry{Reference: "leaked:f16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, filepath.Join(st.TempDir(), "import-123456")); err != nil {
		t.Fatal(err)
	}
	os.Remove(src)
	r, err = st.Remove(ctx, e.Digest)
	if err != nil || r.Freed != 7000 || r.Kept != 0 {
		t.Fatalf("removing a blob with a leaked link in tmp/: %+v, %v; want 7000 bytes freed", r, err)
	}
	if left := tempFiles(t, st); len(left) != 0 {
		t.Fatalf("the work area still holds %v", left)
	}
}

// TestRemoveTempCountsLinks: a stale file of the work area that is a link of a stored blob
// frees nothing when RemoveTemp deletes it, and is not counted.
func TestRemoveTempCountsLinks(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(st.TempDir(), "pack-1.aneb")
	os.WriteFile(tmp, bytes.Repeat([]byte("bundle "), 1000), 0o644)
	_, p, err := st.Add(context.Background(), tmp, Entry{Reference: "b:f16"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leak := filepath.Join(st.TempDir(), "import-1")
	if err := os.Link(p, leak); err != nil {
		t.Fatal(err)
	}
	// Old enough for RemoveTemp (the blob's times too: a link is the same file).
	hourAgo := time.Now().Add(-time.Hour)
	os.Chtimes(leak, hourAgo, hourAgo)
	freed, err := st.RemoveTemp()
	if err != nil || freed != 0 {
		t.Fatalf("RemoveTemp: %d bytes freed, %v; a link of a stored blob frees nothing", freed, err)
	}
	if _, err := os.Stat(leak); !os.IsNotExist(err) {
		t.Errorf("the stale link is still there")
	}
}
