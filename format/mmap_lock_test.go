//go:build linux || darwin

package format

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestLock pins a mapped bundle (a few KiB, within any memlock limit) and reads it afterwards;
// a bundle that is not mapped cannot be locked.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.aneb")
	secs := smallSections()
	writeBundle(t, path, secs, testManifest())
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	s, _ := b.Section(secs[0].name)
	got, err := b.Bytes(s)
	if err != nil || !bytes.Equal(got, secs[0].data) {
		t.Fatalf("section %q after Lock: %q, %v", secs[0].name, got, err)
	}
	r, err := openBytes(smallBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Lock(); err == nil {
		t.Fatal("Lock of a bundle read through io.ReaderAt succeeded")
	}
}

// TestPlaceHuge reads a mapped bundle in (re-reading it when its pages are not in 2 MiB
// mappings, as a 20 KB file's never are) and checks that it still reads the same afterwards.
func TestPlaceHuge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.aneb")
	secs := smallSections()
	writeBundle(t, path, secs, testManifest())
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before, after, err := b.PlaceHuge()
	if err != nil || before < 0 || after < 0 || before > b.Size() || after > b.Size() {
		t.Fatalf("PlaceHuge = %d, %d, %v for a %d-byte bundle", before, after, err, b.Size())
	}
	if err := b.Verify(nil); err != nil {
		t.Fatalf("Verify after PlaceHuge: %v", err)
	}
	s, _ := b.Section(secs[2].name)
	if got, err := b.Bytes(s); err != nil || !bytes.Equal(got, secs[2].data) {
		t.Fatalf("section %q after PlaceHuge differs (%v)", secs[2].name, err)
	}
}
