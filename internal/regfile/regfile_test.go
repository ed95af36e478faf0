//go:build unix

package regfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNeverBlocks: a named pipe with no writer, a directory and /dev/zero are refused at once,
// naming what they are; a regular file (also through a symlink) opens and reads normally.
func TestNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "not a regular file (a named pipe)",
		dir:         "not a regular file (a directory)",
		"/dev/zero": "not a regular file (a character device)",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: %v; want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("opening %s blocked", path)
		}
	}
	reg := filepath.Join(dir, "real")
	os.WriteFile(reg, []byte("data"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(reg, link)
	for _, p := range []string{reg, link} {
		if b, err := ReadFile(p); err != nil || string(b) != "data" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}
