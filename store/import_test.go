//go:build unix

package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestAddVouches: a file the caller wrote into the work area is installed under its name and
// digest, and the next Verify does not hash it again (the run after a pack starts at once);
// writing to the blob afterwards is still noticed.
func TestAddVouches(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(st.TempDir(), "pack-1.aneb")
	data := bytes.Repeat([]byte("bundle "), 1000)
	os.WriteFile(tmp, data, 0o644)
	ctx := context.Background()
	e, p, err := st.Add(ctx, tmp, Entry{Reference: "Org/M:f16", Source: "packed Org/M@abc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := HashFile(ctx, p, nil)
	if e.Digest != want || e.Size != int64(len(data)) {
		t.Errorf("entry %+v; want digest %s", e, want)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the work file is still there")
	}
	got, err := st.Lookup("Org/M:f16")
	if err != nil || got.Source != "packed Org/M@abc" || got.Digest != want {
		t.Errorf("lookup %+v (%v)", got, err)
	}
	hashed := 0
	if _, err := st.Verify(ctx, e.Digest, func(int64, int64) { hashed++ }); err != nil || hashed != 0 {
		t.Errorf("Verify after Add: %v, hashed %d times; want no hashing", err, hashed)
	}
	// A later write to the blob is seen.
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("X"), 3)
	f.Close()
	if _, err := st.Verify(ctx, e.Digest, nil); err == nil {
		t.Errorf("a changed blob passed Verify")
	}
}

// TestImportLinks: a bundle file on the store's file system is hard-linked in (no copy), its
// mode and times are left alone, and it is named and listed with its source.
func TestImportLinks(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "mine.aneb")
	os.WriteFile(src, []byte("a bundle, really"), 0o640)
	before, _ := os.Stat(src)
	e, p, err := st.Import(context.Background(), src, Entry{Reference: "mine:f16", Source: "imported " + src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(src)
	blob, _ := os.Stat(p)
	if !os.SameFile(after, blob) {
		t.Errorf("the blob is a copy, not a link")
	}
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("import changed the file: mode %v -> %v, mtime %v -> %v", before.Mode(), after.Mode(), before.ModTime(), after.ModTime())
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Reference != "mine:f16" || list[0].Source != "imported "+src || list[0].Digest != e.Digest {
		t.Errorf("list %+v (%v)", list, err)
	}
}

// TestImportRefusesFIFO: a named pipe is refused at once instead of blocking the hash.
func TestImportRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Import(context.Background(), fifo, Entry{Reference: "p:f16"}, nil); err == nil {
		t.Errorf("a FIFO was imported")
	}
}
