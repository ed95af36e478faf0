//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNamedPipes names named pipes where anepack reads files: a bundle for inspect, verify and
// push, and a checkpoint's config.json. Each is refused at once; each used to block forever
// in open.
func TestNamedPipes(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "ckpt")
	os.Mkdir(ckpt, 0o755)
	if err := syscall.Mkfifo(filepath.Join(ckpt, "config.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", fifo}, fifo + ": not a regular file (a named pipe)"},
		{[]string{"verify", fifo}, fifo + ": not a regular file (a named pipe)"},
		{[]string{"push", fifo, "oci://127.0.0.1:1/x/y:z", "--plain-http"}, fifo + ": not a regular file (a named pipe)"},
		{[]string{ckpt, "-o", filepath.Join(dir, "out.aneb")}, filepath.Join(ckpt, "config.json") + ": not a regular file (a named pipe)"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("anepack %q: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
