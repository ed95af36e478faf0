package fileutil

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteAtomic: the file appears whole with mode 0644 (parents created); a write that fails
// leaves the old content and no temporary file; tmpDir holds the temporary file when given.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "ref")
	if err := WriteFileAtomic(p, "", []byte("one")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteAtomic(p, "", func(w *bufio.Writer) error {
		w.WriteString("half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	var seen []os.DirEntry
	WriteAtomic(p, tmp, func(w *bufio.Writer) error {
		seen, _ = os.ReadDir(tmp)
		_, err := w.WriteString("two")
		return err
	})
	if b, _ := os.ReadFile(p); string(b) != "two" || len(seen) != 1 {
		t.Errorf("via tmpDir: %q, temporary files seen %v", b, seen)
	}
}

// TestCopyFile: a copy is byte-identical; an existing destination and a cancelled context are
// refused, the latter leaving nothing behind.
func TestCopyFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := make([]byte, 3*copyChunk+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	os.WriteFile(src, data, 0o644)
	dst := filepath.Join(dir, "dst")
	if err := CopyFile(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != string(data) {
		t.Fatal("the copy differs")
	}
	if err := CopyFile(context.Background(), src, dst); !errors.Is(err, os.ErrExist) {
		t.Errorf("over an existing file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := filepath.Join(dir, "other")
	if err := CopyFile(ctx, src, other); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Error("a cancelled copy left its file")
	}
}

// TestMap: a mapping reads the file and outlives the descriptor.
func TestMap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("mapped bytes"), 0o644)
	f, _ := os.Open(p)
	b, err := Map(f, 12)
	f.Close()
	if err != nil || string(b) != "mapped bytes" {
		t.Fatalf("%q, %v", b, err)
	}
	DropPages(b[:0])
	if err := Unmap(b); err != nil {
		t.Fatal(err)
	}
	if b, err := Map(f, 0); b != nil || err != nil {
		t.Errorf("empty map: %v, %v", b, err)
	}
}

// TestFreeSpace: a folder that does not exist yet is measured on its nearest parent.
func TestFreeSpace(t *testing.T) {
	free, ok := FreeSpace(filepath.Join(t.TempDir(), "not", "yet"))
	if lockWorks && (!ok || free <= 0) {
		t.Errorf("FreeSpace: %d, %v", free, ok)
	}
}

// waitLocked reports whether Lock on path is still waiting after a while.
func waitLocked(t *testing.T, path string) {
	t.Helper()
	waited := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Lock(ctx, path, func() { waited <- struct{}{} })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a held lock: %v", err)
	}
	select {
	case <-waited:
	default:
		t.Error("onWait was not called")
	}
}
