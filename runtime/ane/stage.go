package ane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// stagingMarker marks a directory as one of anepack's staging directories, so that
// ClearCache removes those and nothing else of the temporary directory.
const stagingMarker = ".anepack-staging"

const markerText = "anepack staging directory: the MIL program and weights of one ANE program, and what the compiler made of them.\n`anerun doctor --clear-cache` removes it.\n"

// stage writes model.mil and the weight files into dir, where the compiler expects them
// (weights at the path the MIL names them with, less "@model_path/"), and the marker. A file
// that already holds the same bytes is left alone: a warm start writes nothing. changed
// reports that a file was there with other bytes: the directory did not belong to this
// program, so a compiled program in it is not this one.
func stage(dir string, spec Spec) (changed bool, err error) {
	files := map[string][]byte{"model.mil": spec.MIL, stagingMarker: []byte(markerText)}
	for path, blob := range spec.Weights {
		rel, ok := strings.CutPrefix(path, "@model_path/")
		if !ok || rel == "" || rel != filepath.Clean(rel) || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) || rel == "model.mil" || rel == stagingMarker {
			return false, fmt.Errorf("ane: weight path %q must be @model_path/<relative path> (e.g. @model_path/weights/w.bin)", path)
		}
		files[filepath.FromSlash(rel)] = blob
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("ane: staging %s: %w", dir, err)
	}
	for rel, data := range files {
		path := filepath.Join(dir, rel)
		same, existed, err := sameFile(path, data)
		if err != nil {
			return false, fmt.Errorf("ane: staging %s: %w", path, err)
		}
		if same {
			continue
		}
		changed = changed || existed && rel != stagingMarker
		if err := writeAtomic(path, data); err != nil {
			return false, fmt.Errorf("ane: staging %s: %w", path, err)
		}
	}
	return changed, nil
}

// sameFile reports whether the file at path holds exactly data, and whether it exists.
func sameFile(path string, data []byte) (same, exists bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, true, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false, true, nil
	}
	buf := make([]byte, min(len(data), 1<<20))
	for off := 0; off < len(data); {
		n, err := io.ReadFull(f, buf[:min(len(buf), len(data)-off)])
		if err != nil {
			return false, true, err
		}
		if !bytes.Equal(buf[:n], data[off:off+n]) {
			return false, true, nil
		}
		off += n
	}
	return true, true, nil
}

// writeAtomic writes data to path through a temporary file and a rename, so that a crash
// never leaves a half-written file that a later run would take for the program.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// removeStaging removes a staging directory and everything the compiler wrote into it.
func removeStaging(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("ane: removing the stale staging directory %s: %w", dir, err)
	}
	return nil
}

// ClearCache removes every staging directory under root (the directories with the marker
// file that stage writes; nothing else), with the compiled programs they hold, and returns
// how many it removed and their size. A missing root is an empty cache.
func ClearCache(root string) (dirs int, size int64, err error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("ane: reading %s: %w", root, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Lstat(filepath.Join(dir, stagingMarker)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		n := dirSize(dir)
		if err := os.RemoveAll(dir); err != nil {
			return dirs, size, fmt.Errorf("ane: removing %s: %w", dir, err)
		}
		dirs++
		size += n
	}
	return dirs, size, nil
}

// CacheSize returns how many staging directories root holds and their size.
func CacheSize(root string) (dirs int, size int64) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Lstat(filepath.Join(dir, stagingMarker)); e.IsDir() && err == nil && fi.Mode().IsRegular() {
			dirs++
			size += dirSize(dir)
		}
	}
	return dirs, size
}

// dirSize adds up the sizes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
