package fileutil

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
)

// WriteAtomic writes the content that write produces to path so that readers never see a
// partial file: it goes to a temporary file, is flushed and fsynced, renamed over path, and the
// rename is made durable. The temporary file is created in tmpDir, or beside path when tmpDir
// is "" (it must be on the same file system as path for the rename). Its name,
// .<base>.tmp-<random>, lets sweepers of interrupted writes recognise it. On any failure the
// temporary file is removed and path is left as it was. Parent folders of path are created.
// The new file has mode 0644.
func WriteAtomic(path, tmpDir string, write func(w *bufio.Writer) error) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if tmpDir == "" {
		tmpDir = filepath.Dir(path)
	}
	f, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file private (0600); these files are shared with other tools.
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	SyncDir(filepath.Dir(path))
	return nil
}

// WriteFileAtomic is WriteAtomic for content already in memory.
func WriteFileAtomic(path, tmpDir string, data []byte) error {
	return WriteAtomic(path, tmpDir, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir makes a rename in dir durable. Errors are ignored: not every OS or file system can
// fsync a directory, and the rename itself has already succeeded.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// TempName is a fresh name beside path, in the pattern WriteAtomic uses, for callers that make
// the temporary file themselves (a symlink, a hard link) before renaming it over path.
func TempName(path string) string {
	var b [6]byte
	rand.Read(b[:])
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(b[:]))
}
