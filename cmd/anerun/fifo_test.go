//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNamedPipeBundle names a named pipe as the bundle: anerun refuses it at once. It used to
// block forever in open, before the "not a regular file" check.
func TestNamedPipeBundle(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{fifo, "hi"}, {"serve", fifo, "--addr", "127.0.0.1:0"}, {"tokenize", fifo}} {
		start := time.Now()
		r := anerun(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, fifo+": not a regular file (a named pipe)") {
			t.Errorf("anerun %q: exit %d, stderr %q", args, r.code, r.stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("anerun %q took %v", args, took)
		}
	}
}
