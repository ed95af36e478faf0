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
