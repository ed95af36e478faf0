//go:build unix

package format

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenNotRegular: a named pipe with no writer (and a character device) named as a bundle
// is refused at once. Open used to open the path first and check its type afterwards, and
// opening a pipe for reading blocks until a writer comes: forever.
func TestOpenNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "format: open " + fifo + ": not a regular file (a named pipe)",
		"/dev/null": "format: open /dev/null: not a regular file (a character device)",
	} {
		done := make(chan error, 1)
		go func() {
			b, err := Open(path)
			if err == nil {
				b.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != want {
				t.Errorf("Open(%s) = %v; want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocked", path)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.aneb")); err == nil || !strings.HasSuffix(err.Error(), "none.aneb: no such file or directory") || strings.Count(err.Error(), "none.aneb") != 1 {
		t.Errorf("missing file: %v; want the path named once", err)
	}
}
