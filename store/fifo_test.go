//go:build unix

package store

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNamedPipeRefused: hashing or installing a named pipe fails at once instead of blocking
// in open (or, for InstallFrom, after hard-linking the pipe into the store).
func TestNamedPipeRefused(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "m.aneb")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"HashFile": func() error { _, _, err := HashFile(ctx, fifo, nil); return err },
		"InstallFrom": func() error {
			_, err := st.InstallFrom(ctx, fifo, Entry{Digest: "sha256:" + strings.Repeat("0", 64)})
			return err
		},
	} {
		done := make(chan error, 1)
		go func() { done <- op() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") || !strings.Contains(err.Error(), fifo) {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s blocked on a named pipe", name)
		}
	}
}
