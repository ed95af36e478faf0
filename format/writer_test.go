package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestCreateMissingDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "no", "such")
	path := filepath.Join(dir, "model.aneb")
	_, err := Create(path)
	if err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
	for _, w := range []string{path, "output directory " + dir + " does not exist"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if names := dirNames(t, root); len(names) != 0 {
		t.Errorf("Create left %q behind", names)
	}

	// A file where the directory should be, and a directory at the target path.
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(file, "x.aneb")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Create under a file: %v", err)
	}
	if _, err := Create(root); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Create onto a directory: %v", err)
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "model.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(KindBlob, "blob/a", bytes.Repeat([]byte{1}, 3*writeBufferSize)); err != nil {
		t.Fatal(err)
	}
	sw, err := w.Begin(KindMIL, "mil/open")
	if err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)
	if len(names) != 1 || !strings.HasPrefix(names[0], ".model.aneb.tmp-") {
		t.Fatalf("while writing, directory holds %q; want one .model.aneb.tmp-* file", names)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Abort, directory holds %q", names)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("second Abort: %v", err)
	}
	if _, err := sw.Write([]byte("x")); !errors.Is(err, ErrAborted) {
		t.Errorf("Write after Abort: %v; want ErrAborted", err)
	}
	if _, err := w.Begin(KindMIL, "mil/b"); !errors.Is(err, ErrAborted) {
		t.Errorf("Begin after Abort: %v; want ErrAborted", err)
	}
	if _, err := w.Commit(testManifest()); !errors.Is(err, ErrAborted) {
		t.Errorf("Commit after Abort: %v; want ErrAborted", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after Commit of an aborted writer, directory holds %q", names)
	}
}

func TestWriterMisuse(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "m.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.End(); err == nil {
		t.Error("End with no open section succeeded")
	}
	if _, err := w.Add(KindFile, "file/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind SectionKind
		name string
		want string
	}{
		{KindFile, "file/a", "already written"},
		{KindFile, strings.Repeat("n", 71), "at most 70"},
		{KindFile, "", "empty"},
		{KindFile, "a\x00b", "NUL"},
		{KindFile, "\xff", "UTF-8"},
		{SectionKind(6), "file/b", "not a section kind"},
		{0, "file/b", "not a section kind"},
	} {
		if _, err := w.Begin(tc.kind, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Begin(%v, %q) = %v; want an error mentioning %q", tc.kind, tc.name, err, tc.want)
		}
	}
	if _, err := w.Add(KindFile, strings.Repeat("n", 70), nil); err != nil {
		t.Errorf("a 70-byte name was refused: %v", err)
	}
	sw, err := w.Begin(KindMIL, "mil/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Begin(KindMIL, "mil/y"); err == nil || !strings.Contains(err.Error(), `"mil/x" is still open`) {
		t.Errorf("Begin with a section open: %v", err)
	}
	if _, err := w.Commit(testManifest()); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Errorf("Commit with a section open: %v", err)
	}
	if _, err := w.End(); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Write([]byte("late")); err == nil || !strings.Contains(err.Error(), "after End") {
		t.Errorf("Write after End: %v", err)
	}
	if _, err := w.Commit(&Manifest{FormatVersion: "2.0"}); err == nil || !strings.Contains(err.Error(), `"2.0"`) {
		t.Errorf("Commit of a 2.0 manifest: %v", err)
	}
	if _, err := w.Commit(nil); err == nil {
		t.Error("Commit(nil) succeeded")
	}
	// The misuse errors above did not poison the writer.
	if _, err := w.Commit(testManifest()); err != nil {
		t.Fatal(err)
	}
}

func TestCommitIdempotentAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.aneb")
	if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(KindTokenizer, "tokenizer", []byte("t")); err != nil {
		t.Fatal(err)
	}
	h1, err := w.Commit(testManifest())
	if err != nil {
		t.Fatal(err)
	}
	h2, err := w.Commit(testManifest())
	if err != nil || h2 != h1 {
		t.Errorf("second Commit = %+v, %v; want the first header", h2, err)
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
	if _, err := w.Add(KindFile, "file/late", nil); !errors.Is(err, ErrCommitted) {
		t.Errorf("Add after Commit: %v; want ErrCommitted", err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatalf("the bundle did not survive Abort after Commit: %v", err)
	}
	defer b.Close()
	if b.Header() != h1 {
		t.Errorf("header on disk %+v; Commit returned %+v", b.Header(), h1)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q; want only m.aneb", names)
	}
}

// TestCommitFailureLeavesNothing makes Commit fail in two real ways, the manifest cannot be
// encoded and the rename is refused, and checks that Abort then leaves the directory as it was.
func TestCommitFailureLeavesNothing(t *testing.T) {
	t.Run("manifest", func(t *testing.T) {
		dir := t.TempDir()
		w, err := Create(filepath.Join(dir, "m.aneb"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(KindBlob, "blob/a", make([]byte, 100000)); err != nil {
			t.Fatal(err)
		}
		m := testManifest()
		m.Model.Config = json.RawMessage(`{"broken":`)
		if _, err := w.Commit(m); err == nil || !strings.Contains(err.Error(), "encode manifest") {
			t.Fatalf("Commit with a broken config: %v", err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Errorf("directory holds %q", names)
		}
	})
	t.Run("rename", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "m.aneb")
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(KindBlob, "blob/a", make([]byte, 100000)); err != nil {
			t.Fatal(err)
		}
		// Something else puts a non-empty directory at the target while we write.
		if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(testManifest()); err == nil {
			t.Fatal("Commit onto a non-empty directory succeeded")
		}
		if _, err := w.Commit(testManifest()); err == nil {
			t.Error("a second Commit after an I/O failure succeeded")
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if names := dirNames(t, dir); len(names) != 1 || names[0] != "m.aneb" {
			t.Errorf("directory holds %q; want only the m.aneb directory", names)
		}
	})
}

// TestAbortDuringWrite aborts from another goroutine while a section is being written, as
// AbortOnSignal does; run with -race.
func TestAbortDuringWrite(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "m.aneb"))
	if err != nil {
		t.Fatal(err)
	}
	sw, err := w.Begin(KindBlob, "blob/big")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		chunk := make([]byte, 256<<10)
		for i := 0; i < 1<<14; i++ { // at most 4 GiB; Abort stops it long before
			if i == 8 {
				close(started)
			}
			if _, werr = sw.Write(chunk); werr != nil {
				return
			}
		}
	})
	<-started
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !errors.Is(werr, ErrAborted) {
		t.Errorf("the writing goroutine got %v; want ErrAborted", werr)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("directory holds %q", names)
	}
}
